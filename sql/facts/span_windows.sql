-- Fact extraction from a conversation (app/services/facts/pipeline.py,
-- _conversation_source): the stored windows overlapping the span, so each fact points
-- at the window holding its turn.
-- Parameters: tenant; conversation (uuid); from, to (int).
SELECT id, turn_start, turn_end
  FROM memories
 WHERE tenant_id = %(tenant)s AND conversation_id = %(conversation)s
   AND turn_end >= %(from)s AND turn_start <= %(to)s
 ORDER BY turn_start
