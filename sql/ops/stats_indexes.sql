-- The indexes of the named tables (app/services/ops/stats.py, storage): table, index,
-- access method, whether valid (a failed CREATE INDEX CONCURRENTLY leaves one invalid)
-- and size. Catalog rows, the same for every tenant.
-- Parameters (positional): the table names (text[]).
SELECT t.relname, i.relname, am.amname, x.indisvalid, pg_relation_size(i.oid)
  FROM pg_index AS x
  JOIN pg_class AS i ON i.oid = x.indexrelid
  JOIN pg_class AS t ON t.oid = x.indrelid
  JOIN pg_am AS am ON am.oid = i.relam
 WHERE t.relname = ANY(%s) AND t.relnamespace = 'public'::regnamespace
 ORDER BY 1, 2
