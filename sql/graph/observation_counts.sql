-- Graph reads (app/services/graph/reads.py, _observation_counts): how many active facts
-- each entity is about.
-- Parameters, in order: tenant, keys (text[], entity keys).
SELECT fe.entity_key, count(*) FROM fact_entities AS fe JOIN facts AS f
ON f.tenant_id = fe.tenant_id AND f.id = fe.fact_id
WHERE fe.tenant_id = %s AND fe.entity_key = ANY(%s) AND fe.link = 'about'
AND f.status = 'active' GROUP BY fe.entity_key
