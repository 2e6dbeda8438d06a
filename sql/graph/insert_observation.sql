-- Graph writes (app/services/graph/operations.py, insert_observations): one observation
-- as a fact of its entity (fact_type world, confidence 1, created now so call order is
-- kept). An active observation with the same observation_key is a duplicate and skipped:
-- no row comes back for it.
-- Parameters, in order: tenant, subject (the entity's name), text, embedding, entities
-- (the names it links), valid_from, source, observation_kind, observation_key.
INSERT INTO facts (tenant_id, subject, text, embedding, fact_type, confidence,
entities, valid_from, source, observation_kind, observation_key, created_at)
VALUES (%s, %s, %s, %s, 'world', 1.0, %s, %s, %s, %s, %s, clock_timestamp())
ON CONFLICT (tenant_id, observation_key)
WHERE status = 'active' AND observation_key IS NOT NULL DO NOTHING RETURNING id
