-- A BM25 index rebuilt (app/db/keyword_index.py, rebuild): which server start it was
-- rebuilt for, why and how long it took, one row per index, so a restart rebuilds it
-- once.
-- Parameters (positional, in order): index name, server start (timestamptz), reason,
-- seconds.
INSERT INTO keyword_index_repairs (index_name, server_started_at, reason, seconds)
VALUES (%s, %s, %s, %s)
ON CONFLICT (index_name) DO UPDATE
   SET server_started_at = excluded.server_started_at,
       repaired_at = now(),
       reason = excluded.reason,
       seconds = excluded.seconds
