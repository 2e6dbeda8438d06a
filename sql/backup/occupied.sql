-- What a restore target already holds (app/services/ops/backup/restore.py): its tables,
-- views and sequences outside the system schemas, and its extensions besides plpgsql.
-- A restore goes into an empty database only. No parameters.
SELECT
    (SELECT count(*) FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
     WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
       AND n.nspname NOT IN ('pg_catalog', 'information_schema')
       AND NOT starts_with(n.nspname, 'pg_toast')),
    coalesce((SELECT array_agg(extname ORDER BY extname) FROM pg_extension
              WHERE extname <> 'plpgsql'), '{}')
