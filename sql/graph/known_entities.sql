-- Entity links of memories (app/services/graph/mentions.py, known_entities): of the
-- names a batch of memories may hold, those the tenant's memories already link with a
-- type other than thing, and that type (the most frequent), so a name typed once by
-- its context is typed alike where nothing around it says what it is. Read through the
-- (tenant_id, entity_key) index: the cost follows the batch's names, not the tenant's size.
-- Parameters: tenant; keys (text[]) the candidate names' keys.
SELECT entity_key, mode() WITHIN GROUP (ORDER BY entity_type)
  FROM memory_entities
 WHERE tenant_id = %(tenant)s AND entity_key = ANY (%(keys)s) AND entity_type <> 'thing'
 GROUP BY entity_key
