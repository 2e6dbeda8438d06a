"""Whole-database backup and restore (``elephant backup`` / ``elephant restore``).

A backup is one file: a tar archive holding pg_dump's custom-format archive of
Elephant's database, the cluster-level roles that database needs (the app, worker,
keyword and analyst roles: pg_dump of one database leaves them out) and a manifest
with every table's row count, all read in one snapshot. A restore goes into an empty
database only: it creates the missing roles, runs the archive through pg_restore and
psql in one transaction with the fix Apache AGE needs (its catalog names each graph
by the oid of its schema, which a restore changes), then checks every table's row
count against the manifest, the BM25 indexes by their probe, and every index's
validity. See docs/backup.md.
"""
