-- The gate's decision on each window of a conversation, as logged (conversation and turns
-- are in the log since migration 0011; app/services/memory/transcripts.py, _windows).
--   %(tenant)s        text  the tenant
--   %(conversation)s  uuid  the conversation
SELECT turn_start, turn_end, memory_id, decision, composite, threshold, reason, scorer,
       created_at
  FROM admission_log
 WHERE tenant_id = %(tenant)s AND conversation_id = %(conversation)s AND kind = 'window'
   AND turn_start IS NOT NULL
 ORDER BY id
