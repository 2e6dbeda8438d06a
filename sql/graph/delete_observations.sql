-- Graph writes (app/services/graph/operations.py, delete_entities): the observations of
-- the entities deleted (facts about them that are observations; extracted facts that
-- merely mention them stay).
-- Parameters: tenant, keys (text[], the entity keys).
DELETE FROM facts WHERE tenant_id = %(tenant)s AND observation_kind IS NOT NULL
AND id IN (SELECT fact_id FROM fact_entities WHERE tenant_id = %(tenant)s
           AND entity_key = ANY(%(keys)s) AND link = 'about')
