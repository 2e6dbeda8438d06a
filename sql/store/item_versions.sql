-- Store: every version of an item, oldest first: what each put wrote, when, and what
-- replaced it. Parameters: tenant, namespace, key.
SELECT
    {item_columns}
  FROM memories AS m
 WHERE m.tenant_id = %(tenant)s
   AND m.item_namespace = %(namespace)s AND m.item_key = %(key)s
 ORDER BY m.created_at, m.id
