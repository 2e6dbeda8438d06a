-- Decay (app/services/lifecycle/decay.py): how many of the tenant's memories and facts
-- are dormant now (the report's dormant_now).
-- Parameters: tenant.
SELECT (SELECT count(*) FROM memories WHERE tenant_id = %(tenant)s AND dormant_at IS NOT NULL),
       (SELECT count(*) FROM facts WHERE tenant_id = %(tenant)s AND dormant_at IS NOT NULL)
