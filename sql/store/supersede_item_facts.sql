-- Store: the facts extracted from a replaced or deleted version stop being current
-- knowledge: superseded and closed in time (valid_to now, never before their own
-- valid_from), as contradiction detection closes a fact (facts/supersede_fact.sql).
-- The new version's facts come from its own extraction. Parameters: tenant, memory.
UPDATE facts
   SET status = 'superseded',
       expired_at = greatest(now(), recorded_at),
       valid_to = greatest(least(coalesce(valid_to, 'infinity'), now()),
                           coalesce(valid_from, '-infinity'))
 WHERE tenant_id = %(tenant)s AND memory_id = %(memory)s AND status = 'active'
