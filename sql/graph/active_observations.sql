-- Graph reads (app/services/graph/operations.py, active_observations): the observations
-- of the entities true now (status active) or, with as_of, true then: inside their
-- validity, whatever happened to them since (an invalidated one was true until its
-- valid_to). By entity, in recorded order (created_at keeps call order).
-- Parameters: tenant, keys (text[], entity keys), as_of (timestamptz, or null for now).
SELECT fe.entity_key, f.id, f.text, coalesce(f.observation_kind, 'note'), f.source,
f.valid_from, f.valid_to, f.recorded_at, f.status
FROM fact_entities AS fe JOIN facts AS f ON f.tenant_id = fe.tenant_id
AND f.id = fe.fact_id
WHERE fe.tenant_id = %(tenant)s AND fe.entity_key = ANY(%(keys)s)
AND fe.link = 'about' AND CASE
  WHEN %(as_of)s::timestamptz IS NULL THEN f.status = 'active'
  ELSE (f.valid_from IS NULL OR f.valid_from <= %(as_of)s)
   AND (f.valid_to IS NULL OR f.valid_to > %(as_of)s) END
ORDER BY fe.entity_key, f.recorded_at, f.created_at, f.id
