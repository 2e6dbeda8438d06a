-- A tenant's active graph observations: the facts that observe an entity
-- (app/services/ops/stats.py, the graph section).
-- Parameters (positional): tenant.
SELECT count(*)
  FROM facts
 WHERE tenant_id = %s AND observation_kind IS NOT NULL AND status = 'active'
