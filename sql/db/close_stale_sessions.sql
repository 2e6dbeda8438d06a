-- Close the idle client sessions of this database that started before a BM25 rebuild
-- (app/db/keyword_index.py, _close_stale_sessions): pg_textsearch 1.0.0 backends keep
-- their per-index state across a REINDEX; their pools reconnect. The rebuilding
-- process's own sessions (its application_name) are spared: it drains its pools itself.
-- Returns how many.
-- Parameters (positional): when the rebuild started (timestamptz); the application_name
-- to spare ('' spares none).
SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
  FROM pg_stat_activity
 WHERE datname = current_database() AND pid <> pg_backend_pid()
   AND backend_type = 'client backend' AND state = 'idle' AND backend_start < %s
   AND application_name IS DISTINCT FROM nullif(%s, '')
