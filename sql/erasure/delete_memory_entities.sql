-- Erasure (app/services/access/erasure/rows.py), step 7 of 13: the entity links of the
-- memories that go (migration 0020), and every link to the subject's vertices that go.
-- Parameters: tenant; memories (uuid[]) the memories that go; keys (text[]) the entity
-- keys of the vertices that go.
DELETE FROM memory_entities
 WHERE tenant_id = %(tenant)s
   AND (memory_id = ANY(%(memories)s::uuid[]) OR entity_key = ANY(%(keys)s))
