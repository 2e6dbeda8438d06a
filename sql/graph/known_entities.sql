-- Entity links of memories (app/services/graph/mentions.py, known_entities): the
-- entities the tenant's memories already name with a type other than thing, and that
-- type (the most frequent), so a name typed once by its context is typed alike where
-- nothing around it says what it is. The most linked first, at most %(limit)s.
-- Parameters: tenant; limit.
SELECT entity_key, mode() WITHIN GROUP (ORDER BY entity_type)
  FROM memory_entities
 WHERE tenant_id = %(tenant)s AND entity_type <> 'thing'
 GROUP BY entity_key
 ORDER BY count(*) DESC, entity_key
 LIMIT %(limit)s
