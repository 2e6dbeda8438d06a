-- Every tenant HNSW index in this schema and whether it is valid (app/db/tenant_indexes.py,
-- existing_indexes): a CREATE INDEX CONCURRENTLY that failed leaves an invalid one.
-- Parameters (positional): the regular expression tenant index names match.
SELECT c.relname, i.indisvalid
  FROM pg_index AS i
  JOIN pg_class AS c ON c.oid = i.indexrelid
  JOIN pg_namespace AS n ON n.oid = c.relnamespace
 WHERE n.nspname = current_schema() AND c.relname ~ %s
