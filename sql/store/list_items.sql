-- Store: the current items under a namespace prefix ('' every item) whose value
-- contains item_value (NULL: any), most recently updated first.
-- Parameters: tenant, prefix, item_value (jsonb | NULL), limit, offset.
SELECT
    {item_columns}
  FROM memories AS m
 WHERE m.tenant_id = %(tenant)s
   AND m.item_key IS NOT NULL AND m.superseded_at IS NULL
   AND (%(prefix)s = '' OR m.item_namespace = %(prefix)s
        OR left(m.item_namespace, length(%(prefix)s) + 1) = %(prefix)s || '.')
   AND (%(item_value)s::jsonb IS NULL OR m.item_value @> %(item_value)s::jsonb)
 ORDER BY m.created_at DESC, m.id
 LIMIT %(limit)s OFFSET %(offset)s
