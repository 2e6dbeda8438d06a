-- Fact extraction from a conversation, at write time (app/services/facts/pipeline.py,
-- _check_source): the span's turns as they are now, locked FOR KEY SHARE until the job's
-- transaction ends (an erasure of a subject deletes single turns: it waits, or ended
-- before); compared with the turns the extractor was shown.
-- Parameters: tenant; conversation (uuid); from, to (int).
SELECT seq, text
  FROM turns
 WHERE tenant_id = %(tenant)s AND conversation_id = %(conversation)s
   AND seq BETWEEN %(from)s AND %(to)s
 ORDER BY seq
   FOR KEY SHARE
