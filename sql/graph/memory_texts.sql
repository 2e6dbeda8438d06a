-- Entity links of memories (app/services/graph/mentions.py, link_memories): the text of
-- each memory to link, turn by turn for a window (its turns' speaker, text and date, so
-- relative dates resolve against when each was said), the note's text for a note, with
-- the speakers of the window's conversation (persons, and whom a nickname names), read
-- once per conversation.
-- Parameters: tenant; ids (uuid[]).
WITH picked AS (
    SELECT m.id, m.conversation_id, m.turn_start, m.turn_end, m.text,
           coalesce(m.event_at, m.created_at) AS said_at
      FROM memories AS m
     WHERE m.tenant_id = %(tenant)s AND m.id = ANY (%(ids)s)
), speakers AS (
    SELECT t.conversation_id, array_agg(DISTINCT t.speaker) AS names
      FROM turns AS t
     WHERE t.tenant_id = %(tenant)s AND t.speaker IS NOT NULL
       AND t.conversation_id IN (SELECT p.conversation_id FROM picked AS p)
     GROUP BY t.conversation_id
)
SELECT p.id, t.speaker, coalesce(t.text, p.text), coalesce(t.occurred_at, p.said_at),
       coalesce(s.names, '{}')
  FROM picked AS p
  LEFT JOIN turns AS t
    ON p.conversation_id IS NOT NULL AND t.tenant_id = %(tenant)s
   AND t.conversation_id = p.conversation_id AND t.seq BETWEEN p.turn_start AND p.turn_end
  LEFT JOIN speakers AS s ON s.conversation_id = p.conversation_id
 ORDER BY p.id, t.seq
