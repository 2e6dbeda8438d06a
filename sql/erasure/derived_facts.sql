-- Erasure (app/services/access/erasure/rows.py): facts extracted from conversations and
-- memories that go. For a subject (every false) a fact of a removed window stays while
-- one of its recorded source turns stays: it came from someone else's words in the same
-- window (its memory_id becomes null). A fact that records no source turn cannot be
-- traced to a surviving one: it goes.
-- Parameters: tenant; convs, memories (uuid[]) what goes; every (boolean) true for every
-- target but a subject; turns (bigint[]) the turns that go.
SELECT f.id
  FROM facts AS f
 WHERE f.tenant_id = %(tenant)s
   AND (f.conversation_id = ANY(%(convs)s::uuid[])
        OR (f.memory_id = ANY(%(memories)s::uuid[])
            AND (%(every)s
                 OR NOT EXISTS (
                     SELECT 1
                       FROM turns AS t
                      WHERE t.tenant_id = f.tenant_id
                        AND t.conversation_id = f.conversation_id
                        AND coalesce(t.source_turn_id, '#' || t.seq) = ANY(f.source_turn_ids)
                        AND t.id <> ALL(%(turns)s)))))
