-- Every recorded tenant's vector way, biggest first (app/db/tenant_indexes.py, ways):
-- doctor lists them across tenants, as the migrator. No parameters.
SELECT tenant_id, way, vector_rows, build_seconds, counted_at
  FROM tenant_vector_ways
 ORDER BY vector_rows DESC, tenant_id
