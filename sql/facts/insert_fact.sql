-- Fact extraction (app/services/facts/pipeline.py): one extracted fact, in one pipelined
-- batch; a statement the tenant already knows (same content hash) inserts nothing and
-- returns no row.
-- Parameters, in order: tenant; memory (uuid or NULL); conversation (uuid or NULL);
-- source_turn_ids (text[]); subject; text; embedding; fact_type; confidence; entities
-- (jsonb); valid_from, valid_to (timestamptz); content_hash; source; metadata (jsonb).
INSERT INTO facts (tenant_id, memory_id, conversation_id, source_turn_ids, subject, text,
                   embedding, fact_type, confidence, entities, valid_from, valid_to,
                   content_hash, source, metadata)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT (tenant_id, content_hash) DO NOTHING
RETURNING id
