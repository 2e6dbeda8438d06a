-- Commit (app/services/memory/commit.py, _upsert_conversation): where the new turns of
-- a known conversation start (appending is allowed): one past its last turn, 0 if none.
--   %(tenant)s        text  the tenant
--   %(conversation)s  uuid  the conversation
SELECT coalesce(max(seq) + 1, 0)
  FROM turns
 WHERE tenant_id = %(tenant)s AND conversation_id = %(conversation)s
