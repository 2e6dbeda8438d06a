-- Fact extraction from a conversation (app/services/facts/pipeline.py,
-- _conversation_source): the turns of one job's span, in order; occurred_at is the
-- turn's timestamp, else its session date (set at commit).
-- Parameters: tenant; conversation (uuid); from, to (int: the span's first and last seq).
SELECT seq, speaker, text, coalesce(occurred_at, created_at), source_turn_id
  FROM turns
 WHERE tenant_id = %(tenant)s AND conversation_id = %(conversation)s
   AND seq BETWEEN %(from)s AND %(to)s
 ORDER BY seq
