-- AGE graph store (app/services/graph/age.py, counts): the tenant's edges by label (the
-- relation type), current (no valid_to) and closed apart (GraphCounts.tally). The code
-- composes in {edges}, the tenant graph's parent edge table: the graph is the tenant's
-- own schema, so no tenant_id is named.
-- Parameters: none.
SELECT c.relname::text, (r.properties::text::jsonb ->> 'valid_to') IS NULL, count(*)
  FROM {edges} AS r
  JOIN pg_catalog.pg_class AS c ON c.oid = r.tableoid
 GROUP BY 1, 2
 ORDER BY 1
