-- PATCH /memories/{id} (app/services/memory/records.py, update_memory): importance and
-- source where given (NULL keeps them), and the metadata as merged.
--   importance (real|NULL); source (text|NULL); metadata (jsonb); tenant (text); id (uuid)
UPDATE memories
   SET importance = coalesce(%(importance)s, importance),
       source = coalesce(%(source)s, source),
       metadata = %(metadata)s::jsonb
 WHERE tenant_id = %(tenant)s AND id = %(id)s
