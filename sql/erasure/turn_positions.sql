-- Erasure (app/services/access/erasure/rows.py): the conversation and position (seq) of
-- each turn that goes, read before they go: extraction jobs over a range holding one
-- (sql/erasure/delete_jobs.sql).
-- Parameters: tenant; turns (bigint[]).
SELECT conversation_id::text, seq
  FROM turns
 WHERE tenant_id = %(tenant)s AND id = ANY(%(turns)s)
