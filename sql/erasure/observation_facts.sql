-- Erasure (app/services/access/erasure/rows.py): the observations of graph vertices that
-- go, which go with them (as graph delete_entities does). Facts that only mention a
-- vertex stay unless the target itself reaches them.
-- Parameters, in order: the tenant; the entity keys (text[]) of the vertices that go.
SELECT f.id
  FROM facts AS f
  JOIN fact_entities AS fe ON fe.tenant_id = f.tenant_id AND fe.fact_id = f.id
 WHERE f.tenant_id = %s
   AND fe.entity_key = ANY(%s)
   AND fe.link = 'about'
   AND f.observation_kind IS NOT NULL
