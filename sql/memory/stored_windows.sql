-- A conversation's stored windows (app/services/memory/transcripts.py, _windows): those
-- logged before migration 0011 have no decision naming their turns, and still show.
--   %(tenant)s        text  the tenant
--   %(conversation)s  uuid  the conversation
SELECT id, turn_start, turn_end
  FROM memories
 WHERE tenant_id = %(tenant)s AND conversation_id = %(conversation)s AND kind = 'window'
   AND turn_start IS NOT NULL
