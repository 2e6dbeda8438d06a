-- One row's new vector (app/services/ops/reembed/rows.py), as the migrator: the re-embed
-- rewrites every tenant's vectors. The code composes in, with psycopg.sql, the table,
-- its alias, the column (embedding_next, or embedding after the swap), the key's type,
-- and, when the row's version is checked, the test that its version is still the one
-- read (a row changed meanwhile is left to the catch-up). Parameters, in order: the
-- vector, the id, and the version read when it is checked.
UPDATE {table} AS {alias}
   SET {column} = %s
 WHERE {key} = %s::{key_type}{version_check}
