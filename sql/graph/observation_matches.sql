-- Graph search (app/services/graph/reads.py, _observation_matches): the entities whose
-- active facts are nearest the query vector, nearest first: a bounded pool of nearest
-- facts (the vector index), then their entities, each at its nearest fact's distance,
-- below a distance of 0.6.
-- Parameters: tenant, vector, pool (how many nearest facts).
SELECT fe.entity_key, min(n.distance) AS d FROM (
  SELECT f.id, f.embedding <=> %(vector)s AS distance FROM facts AS f
   WHERE f.tenant_id = %(tenant)s AND f.status = 'active'
   ORDER BY f.embedding <=> %(vector)s LIMIT %(pool)s) AS n
 JOIN fact_entities AS fe ON fe.tenant_id = %(tenant)s AND fe.fact_id = n.id
 WHERE n.distance < 0.6 GROUP BY fe.entity_key ORDER BY d
