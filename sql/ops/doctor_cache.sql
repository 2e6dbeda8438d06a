-- Doctor's cache check (app/services/ops/doctor.py): shared_buffers in bytes against the
-- size of the indexes every search reads (HNSW, BM25, DiskANN) in this schema.
-- No parameters.
SELECT pg_size_bytes(current_setting('shared_buffers')),
       coalesce(sum(pg_relation_size(i.indexrelid)), 0)
  FROM pg_index AS i
  JOIN pg_class AS c ON c.oid = i.indexrelid
  JOIN pg_am AS am ON am.oid = c.relam
 WHERE am.amname IN ('hnsw', 'bm25', 'diskann')
   AND c.relnamespace = current_schema()::regnamespace
