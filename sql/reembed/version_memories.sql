-- A memory's version for the re-embed (app/services/ops/reembed/rows.py): its text, which
-- is also the text its vector is made from. Read with the row, checked again when the
-- new vector is written: a row whose version moved meanwhile is left to the catch-up.
m.text
