-- The turn passages of stored windows (app/services/memory/window_vectors.py): what a
-- window's vector is pooled from when embedding.window_vectors = pooled, read back for a
-- re-embed or a backfill so they make the vector the commit made. One row per passage of
-- each turn the window spans, in turn and passage order, with what its text is cut from
-- (app/services/memory/passages.py): the turn's speaker, text and date, and the span.
--   %(ids)s (uuid[]: the windows)
SELECT m.id::text, t.speaker, t.text, t.occurred_at, p.char_start, p.char_end
  FROM memories AS m
  JOIN turns AS t
    ON t.tenant_id = m.tenant_id
   AND t.conversation_id = m.conversation_id
   AND t.seq BETWEEN m.turn_start AND m.turn_end
  JOIN passages AS p ON p.tenant_id = t.tenant_id AND p.turn_id = t.id
 WHERE m.id = ANY (%(ids)s::uuid[])
   AND m.kind = 'window'
 ORDER BY m.id, t.seq, p.ordinal
