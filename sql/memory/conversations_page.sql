-- The tenant's conversations, newest first, one page (app/services/memory/transcripts.py,
-- GET /conversations). Paged by keyset (created_at, id): a commit between two pages
-- shifts nothing.
--   %(tenant)s    text         the tenant
--   %(source)s    text         only conversations from this source; NULL: all
--   %(after_at)s  timestamptz  the cursor's conversation (with after_id); NULL: the newest
--   %(after_id)s  uuid
--   %(limit)s     int          at most this many (a page asks one more, to know there is a next)
SELECT
    {conversation_summary}
  FROM conversations AS c
 WHERE c.tenant_id = %(tenant)s
   AND (%(source)s::text IS NULL OR c.source = %(source)s)
   AND (%(after_at)s::timestamptz IS NULL
        OR (c.created_at, c.id) < (%(after_at)s, %(after_id)s::uuid))
 ORDER BY c.created_at DESC, c.id DESC
 LIMIT %(limit)s
