-- Store: an item's current version (none when it was never put, or deleted).
-- Parameters: tenant, namespace (labels joined by '.'), key.
SELECT
    {item_columns}
  FROM memories AS m
 WHERE m.tenant_id = %(tenant)s
   AND m.item_namespace = %(namespace)s AND m.item_key = %(key)s
   AND m.item_key IS NOT NULL AND m.superseded_at IS NULL
