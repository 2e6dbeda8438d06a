-- The handoffs written when a conversation's session was closed, newest first
-- (app/services/memory/transcripts.py, the transcript).
--   %(tenant)s        text  the tenant
--   %(conversation)s  uuid  the conversation
SELECT
    {handoff_columns}
  FROM handoffs
 WHERE tenant_id = %(tenant)s AND conversation_id = %(conversation)s
 ORDER BY created_at DESC, id DESC
