-- The gate decisions that stored a memory or matched it as a duplicate, oldest first
-- (app/services/gate/decisions.py, decisions_for_memory: a memory's record page).
--   %(tenant)s  text  the tenant
--   %(memory)s  uuid  the memory
SELECT
    {decision_columns}
  FROM admission_log
 WHERE tenant_id = %(tenant)s AND memory_id = %(memory)s
 ORDER BY id
