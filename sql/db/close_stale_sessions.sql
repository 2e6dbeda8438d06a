-- Close the idle client sessions of this database that started before a BM25 rebuild
-- (app/db/keyword_index.py, _close_stale_sessions): pg_textsearch 1.0.0 backends keep
-- their per-index state across a REINDEX; their pools reconnect. Returns how many.
-- Parameters (positional): when the rebuild started (timestamptz).
SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
  FROM pg_stat_activity
 WHERE datname = current_database() AND pid <> pg_backend_pid()
   AND backend_type = 'client backend' AND state = 'idle' AND backend_start < %s
