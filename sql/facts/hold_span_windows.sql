-- Fact extraction from a conversation, at write time (app/services/facts/pipeline.py,
-- _check_source): the windows over the span that still exist, locked FOR KEY SHARE until
-- the job's transaction ends (a delete waits; updates of a window do not); the facts
-- point at them.
-- Parameters: tenant; conversation (uuid); from, to (int).
SELECT id
  FROM memories
 WHERE tenant_id = %(tenant)s AND conversation_id = %(conversation)s
   AND turn_end >= %(from)s AND turn_start <= %(to)s
   FOR KEY SHARE
