-- Fact-entity links (app/services/graph/linking.py, _link; operations.py, insert_observations):
-- a fact's link to an entity it is about or names, so the entity's facts are found through
-- the (tenant_id, entity_key) index. A link made already is left as it is.
-- Parameters, in order: tenant, fact id, entity key, link ('about' or 'mentions').
INSERT INTO fact_entities (tenant_id, fact_id, entity_key, link)
VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING
