-- The memories linked to the entity k.entity_key, of the tenant: through their own links
-- (memory_entities) or through a fact made from them (fact_entities, facts.memory_id).
-- A fragment (one column, memory_id) that entity_expansion_lane.sql and
-- entity_match_lane.sql splice into a LATERAL subquery where a line holds only
-- {entity_memories}. Parameters: tenant text. This header is not spliced.
SELECT me.memory_id
FROM memory_entities AS me
WHERE me.tenant_id = %(tenant)s AND me.entity_key = k.entity_key
UNION
SELECT f.memory_id
FROM fact_entities AS fe
JOIN facts AS f ON f.id = fe.fact_id AND f.tenant_id = %(tenant)s
WHERE fe.tenant_id = %(tenant)s AND fe.entity_key = k.entity_key
