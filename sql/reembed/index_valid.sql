-- Whether a twin index on embedding_next is built and valid (app/services/ops/reembed/
-- phases.py): no row, not built yet; false, an interrupted CREATE INDEX CONCURRENTLY
-- left it invalid (dropped and built again). Parameter: the index name.
SELECT x.indisvalid
  FROM pg_index AS x
  JOIN pg_class AS i ON i.oid = x.indexrelid
 WHERE i.relname = %s AND i.relnamespace = 'public'::regnamespace
