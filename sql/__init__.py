"""SQL files the code runs and analysts can read (shipped as package data).

Statements may hold slots, lines holding only ``{name}``, that the code fills with
the fragment file ``<name>.sql`` when it loads them (app/db/resources.py, splice):
the filters every search lane applies are written once, in memory_filters.sql and
fact_filters.sql.
"""
