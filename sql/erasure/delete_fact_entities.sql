-- Erasure (app/services/access/erasure/rows.py), step 3 of 13: the links between facts
-- and graph entities, of the facts that go and of the subject's vertices that go.
-- Parameters: tenant; facts (uuid[]) the facts that go; keys (text[]) the entity keys of
-- the vertices that go.
DELETE FROM fact_entities
 WHERE tenant_id = %(tenant)s
   AND (fact_id = ANY(%(facts)s::uuid[]) OR entity_key = ANY(%(keys)s))
