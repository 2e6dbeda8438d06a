-- Entity links of memories (app/services/graph/mentions.py, link_memories): the text of
-- each memory to link, turn by turn for a window (its turns' speaker, text and date, so
-- relative dates resolve against when each was said), the note's text for a note, with
-- the speakers of the window's conversation (persons, and whom a nickname names).
-- Parameters: tenant; ids (uuid[]).
SELECT m.id, t.speaker, coalesce(t.text, m.text), coalesce(t.occurred_at, m.event_at, m.created_at),
       coalesce((SELECT array_agg(DISTINCT s.speaker) FROM turns AS s
                  WHERE s.tenant_id = m.tenant_id AND s.conversation_id = m.conversation_id
                    AND s.speaker IS NOT NULL), '{}')
  FROM memories AS m
  LEFT JOIN turns AS t
    ON m.conversation_id IS NOT NULL AND t.tenant_id = m.tenant_id
   AND t.conversation_id = m.conversation_id AND t.seq BETWEEN m.turn_start AND m.turn_end
 WHERE m.tenant_id = %(tenant)s AND m.id = ANY (%(ids)s)
 ORDER BY m.id, t.seq
