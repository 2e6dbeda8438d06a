-- Fragment: the columns of a fact's record, in FactRecord's field order
-- (app/services/memory/records.py); its entity links as a JSON list of {key, link}.
-- Spliced in where a line holds only {fact_record}; the fact is ``f``.
f.id::text, f.text, f.subject, f.fact_type, f.confidence, f.importance, f.status,
f.valid_from, f.valid_to, f.recorded_at, f.expired_at, f.superseded_by::text,
f.memory_id::text, f.conversation_id::text, f.source, f.source_turn_ids, f.observation_kind,
coalesce((SELECT jsonb_agg(jsonb_build_object('key', fe.entity_key, 'link', fe.link)
                           ORDER BY fe.link, fe.entity_key)
          FROM fact_entities AS fe
         WHERE fe.tenant_id = f.tenant_id AND fe.fact_id = f.id), '[]'::jsonb),
f.metadata, f.created_at
