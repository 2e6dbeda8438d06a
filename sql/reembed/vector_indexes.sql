-- Every index of a table that reads its embedding column: as a column, in an
-- expression, or in a partial index's predicate (app/services/ops/reembed/phases.py).
-- The re-embed builds a twin of each on embedding_next before the swap. Returns the
-- index name and its CREATE INDEX statement. Parameter: the table name.
SELECT i.relname, pg_get_indexdef(i.oid)
  FROM pg_index AS x
  JOIN pg_class AS i ON i.oid = x.indexrelid
  JOIN pg_attribute AS a ON a.attrelid = x.indrelid AND a.attname = 'embedding'
 WHERE x.indrelid = %s::regclass
   AND (a.attnum = ANY (x.indkey::int2[])
        OR coalesce(pg_get_expr(x.indexprs, x.indrelid), '') ~ '\membedding\M'
        OR coalesce(pg_get_expr(x.indpred, x.indrelid), '') ~ '\membedding\M')
 ORDER BY i.relname
