-- Every ordinary and partitioned-leaf table of the database outside the system schemas
-- (app/services/ops/backup): Elephant's tables, the AGE catalog (ag_catalog.ag_graph and
-- ag_label) and each tenant's graph schema. A backup counts their rows in its
-- snapshot; a restore counts them again. No parameters.
SELECT n.nspname, c.relname
FROM pg_class AS c
JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE c.relkind = 'r'
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND NOT starts_with(n.nspname, 'pg_toast')
  AND NOT starts_with(n.nspname, 'pg_temp')
ORDER BY 1, 2
