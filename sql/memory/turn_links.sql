-- Search hits → the conversation turns they came from (app/services/memory/transcripts.py,
-- turn_links): a window's own turn range; a fact's cited turns (the caller's turn ids),
-- else its window's range. Notes and facts of notes have no turns and are left out.
--   %(tenant)s    text    the tenant
--   %(memories)s  uuid[]  the memory hits
--   %(facts)s     uuid[]  the fact hits
SELECT m.id::text, m.conversation_id::text, m.turn_start, m.turn_end
  FROM memories AS m
 WHERE m.tenant_id = %(tenant)s AND m.id = ANY(%(memories)s)
   AND m.conversation_id IS NOT NULL AND m.turn_start IS NOT NULL
UNION ALL
SELECT f.id::text, f.conversation_id::text,
       coalesce(min(t.seq), m.turn_start), coalesce(max(t.seq), m.turn_end)
  FROM facts AS f
  LEFT JOIN turns AS t ON t.tenant_id = f.tenant_id
       AND t.conversation_id = f.conversation_id
       AND t.source_turn_id = ANY(f.source_turn_ids)
  LEFT JOIN memories AS m ON m.tenant_id = f.tenant_id AND m.id = f.memory_id
       AND m.kind = 'window'
 WHERE f.tenant_id = %(tenant)s AND f.id = ANY(%(facts)s)
   AND f.conversation_id IS NOT NULL
 GROUP BY f.id, f.conversation_id, m.turn_start, m.turn_end
