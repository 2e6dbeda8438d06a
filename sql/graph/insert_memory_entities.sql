-- Entity links of memories (app/services/graph/mentions.py, link_memories): one memory's
-- link to an entity it names; written after the memory's old links were deleted, so a
-- memory linked again (a backfill, an extraction run again) holds what its text names now.
-- Parameters, in order: tenant, memory id, entity key, name, entity type, mentions.
INSERT INTO memory_entities (tenant_id, memory_id, entity_key, name, entity_type, mentions)
VALUES (%s, %s, %s, %s, %s, %s)
ON CONFLICT (tenant_id, memory_id, entity_key) DO UPDATE SET mentions = excluded.mentions
