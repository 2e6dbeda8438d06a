-- Neighbourhood (app/services/graph/neighbourhood.py, _observations): every observation
-- of one entity, whatever its status, earliest validity first, bounded; the last column is
-- how many there are in all.
-- Parameters, in order: tenant, entity key, the bound (MAX_OBSERVATIONS).
SELECT f.id, f.text, coalesce(f.observation_kind, 'note'), f.source, f.status,
f.valid_from, f.valid_to, f.recorded_at, count(*) OVER ()
FROM fact_entities AS fe JOIN facts AS f
ON f.tenant_id = fe.tenant_id AND f.id = fe.fact_id
WHERE fe.tenant_id = %s AND fe.entity_key = %s AND fe.link = 'about'
ORDER BY f.valid_from NULLS FIRST, f.recorded_at, f.created_at, f.id LIMIT %s
