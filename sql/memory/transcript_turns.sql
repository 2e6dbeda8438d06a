-- A conversation's turns, in order (app/services/memory/transcripts.py, the transcript).
--   %(tenant)s        text  the tenant
--   %(conversation)s  uuid  the conversation
SELECT seq, speaker, text, occurred_at, source_turn_id, created_at
  FROM turns
 WHERE tenant_id = %(tenant)s AND conversation_id = %(conversation)s
 ORDER BY seq
