-- How many sessions of one process (its application_name) opened before a BM25 rebuild
-- are still connected (app/db/keyword_index.py, _settle): the rebuilding process waits
-- for its drained pools to close them before it probes the rebuilt indexes.
-- Parameters (positional): the application_name; when the rebuild started (timestamptz).
SELECT count(*)
  FROM pg_stat_activity
 WHERE datname = current_database() AND pid <> pg_backend_pid()
   AND application_name = %s AND backend_start < %s
