-- Erasure of a subject (app/services/access/erasure/rows.py): the windows holding a turn
-- that goes (the turn's position within the window's range), and memories whose text or
-- any string of their metadata names the subject.
-- Parameters: tenant; turns (bigint[]) the turns that go; p the subject's pattern.
SELECT m.id
  FROM memories AS m
  JOIN turns AS t
    ON t.tenant_id = m.tenant_id
   AND t.conversation_id = m.conversation_id
   AND t.seq BETWEEN m.turn_start AND m.turn_end
 WHERE m.tenant_id = %(tenant)s AND t.id = ANY(%(turns)s)
UNION
SELECT id
  FROM memories
 WHERE tenant_id = %(tenant)s
   AND (%(p)s::text IS NOT NULL
        AND (text ~* %(p)s
             OR EXISTS (SELECT 1
                          FROM jsonb_path_query(metadata, 'strict $.** ? (@.type() == "string")') AS v (s)
                         WHERE v.s #>> '{}' ~* %(p)s)))
