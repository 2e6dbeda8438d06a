-- Store: the namespaces that hold a current item, in order.
-- Parameters: tenant, prefix ('' every namespace).
SELECT DISTINCT m.item_namespace
  FROM memories AS m
 WHERE m.tenant_id = %(tenant)s
   AND m.item_key IS NOT NULL AND m.superseded_at IS NULL
   AND (%(prefix)s = '' OR m.item_namespace = %(prefix)s
        OR left(m.item_namespace, length(%(prefix)s) + 1) = %(prefix)s || '.')
 ORDER BY m.item_namespace
