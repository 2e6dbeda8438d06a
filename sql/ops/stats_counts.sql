-- A tenant's conversations, turns and contradictions, counted in one round trip
-- (app/services/ops/stats.py).
-- Parameters: tenant (named).
SELECT (SELECT count(*) FROM conversations WHERE tenant_id = %(tenant)s),
       (SELECT count(*) FROM turns WHERE tenant_id = %(tenant)s),
       (SELECT count(*) FROM contradictions WHERE tenant_id = %(tenant)s)
