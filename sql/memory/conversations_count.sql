-- How many conversations GET /conversations lists (app/services/memory/transcripts.py,
-- its ``total``).
--   %(tenant)s  text  the tenant
--   %(source)s  text  only conversations from this source; NULL: all
SELECT count(*)
  FROM conversations AS c
 WHERE c.tenant_id = %(tenant)s
   AND (%(source)s::text IS NULL OR c.source = %(source)s)
