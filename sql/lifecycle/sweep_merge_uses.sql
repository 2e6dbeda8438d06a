-- Dedup sweep (app/services/lifecycle/sweep.py, merge): the gone note's uses count for
-- the note kept (the DELETE's trigger then drops the gone note's row); counts saturate at
-- the int4 maximum.
-- Parameters: tenant, keep, gone (memory ids).
INSERT INTO access_stats AS a (tenant_id, item_id, item_kind, access_count, last_accessed_at)
SELECT gone.tenant_id, %(keep)s, 'memory', gone.access_count, gone.last_accessed_at
  FROM access_stats AS gone
 WHERE gone.tenant_id = %(tenant)s AND gone.item_id = %(gone)s
ON CONFLICT (tenant_id, item_id) DO UPDATE
   SET access_count = least(a.access_count::bigint + excluded.access_count, 2147483647),
       last_accessed_at = greatest(a.last_accessed_at, excluded.last_accessed_at)
