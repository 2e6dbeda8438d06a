-- Every tenant's vectors in one table, and the table's total (app/db/tenant_indexes.py,
-- count_rows): which tenants are big enough for an index of their own. An operator
-- statement across tenants (GROUP BY tenant_id), as the migrator.
-- The table is composed in with psycopg.sql: table, an identifier (memories, facts,
-- passages). No parameters.
SELECT tenant_id, count(*), sum(count(*)) OVER ()
  FROM {table}
 WHERE embedding IS NOT NULL
 GROUP BY tenant_id
