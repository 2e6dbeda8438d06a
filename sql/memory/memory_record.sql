-- Fragment: the columns of a memory's record, in MemoryRecord's field order
-- (app/services/memory/records.py): the memory, its conversation's external id (c),
-- its access counts (access_stats), whether it has a vector, and how many facts came
-- from it. Spliced in where a line holds only {memory_record}; the memory is ``m``.
m.id::text, m.kind, m.text, m.source, m.importance, m.conversation_id::text, c.external_id,
m.turn_start, m.turn_end, m.source_turn_ids, m.event_at, m.created_at, m.seen_count,
coalesce((SELECT a.access_count FROM access_stats AS a
           WHERE a.tenant_id = m.tenant_id AND a.item_id = m.id), 0),
(SELECT a.last_accessed_at FROM access_stats AS a
  WHERE a.tenant_id = m.tenant_id AND a.item_id = m.id),
m.metadata, m.embedding IS NOT NULL,
(SELECT count(*) FROM facts AS f WHERE f.tenant_id = m.tenant_id AND f.memory_id = m.id)::int
