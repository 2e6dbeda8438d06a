-- Store: an item's version is no longer current (a newer put replaced it, or the item
-- was deleted). Its row stays as history; search skips it. Parameters: tenant, memory.
UPDATE memories
   SET superseded_at = clock_timestamp()
 WHERE tenant_id = %(tenant)s AND id = %(memory)s AND superseded_at IS NULL
