-- Every handoff of the tenant's closed sessions, newest first, one page
-- (app/services/memory/transcripts.py, GET /handoffs), by keyset (created_at, id).
--   %(tenant)s    text         the tenant
--   %(project)s   text         only this project's; NULL: all
--   %(after_at)s  timestamptz  the cursor's handoff (with after_id); NULL: the newest
--   %(after_id)s  bigint
--   %(limit)s     int          at most this many (a page asks one more, to know there is a next)
SELECT
    {handoff_columns}
  FROM handoffs
 WHERE tenant_id = %(tenant)s
   AND (%(project)s::text IS NULL OR project = %(project)s)
   AND (%(after_at)s::timestamptz IS NULL
        OR (created_at, id) < (%(after_at)s, %(after_id)s::bigint))
 ORDER BY created_at DESC, id DESC
 LIMIT %(limit)s
