-- Every pg_textsearch BM25 index of the current schema and its table
-- (app/db/keyword_index.py, bm25_indexes): what the start-up rebuild and the probe visit.
-- No parameters.
SELECT index.relname, tab.relname
  FROM pg_index AS i
  JOIN pg_class AS index ON index.oid = i.indexrelid
  JOIN pg_class AS tab ON tab.oid = i.indrelid
  JOIN pg_am AS am ON am.oid = index.relam
  JOIN pg_namespace AS ns ON ns.oid = tab.relnamespace
 WHERE am.amname = 'bm25' AND ns.nspname = current_schema()
 ORDER BY 1
