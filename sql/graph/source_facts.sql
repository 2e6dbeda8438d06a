-- Neighbourhood (app/services/graph/neighbourhood.py, _source_facts): for each
-- (subject, other) pair, the earliest extracted fact (not an observation) about the subject
-- that also names the other: where ingest took its `mentions` edge from.
-- Parameters: tenant, subjects and others (text[], the pairs side by side).
SELECT DISTINCT ON (p.s, p.t) p.s, p.t, f.id, f.text
FROM unnest(%(subjects)s::text[], %(others)s::text[]) AS p (s, t)
JOIN fact_entities AS a ON a.tenant_id = %(tenant)s AND a.entity_key = p.s
     AND a.link = 'about'
JOIN fact_entities AS b ON b.tenant_id = a.tenant_id AND b.fact_id = a.fact_id
     AND b.entity_key = p.t
JOIN facts AS f ON f.tenant_id = a.tenant_id AND f.id = a.fact_id
WHERE f.tenant_id = %(tenant)s AND f.observation_kind IS NULL
ORDER BY p.s, p.t, f.created_at, f.id
