-- Store: the current items among these notes (search hits mapped back to items).
-- Parameters: tenant, ids (uuid[]).
SELECT
    {item_columns}
  FROM memories AS m
 WHERE m.tenant_id = %(tenant)s AND m.id = ANY (%(ids)s::uuid[])
   AND m.item_key IS NOT NULL AND m.superseded_at IS NULL
