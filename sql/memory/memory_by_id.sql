-- One memory's record (app/services/memory/records.py: GET /memories/{id}, and the row
-- read back after a PATCH).
--   tenant (text); id (uuid)
SELECT
    {memory_record}
  FROM memories AS m
  LEFT JOIN conversations AS c ON c.tenant_id = m.tenant_id AND c.id = m.conversation_id
 WHERE m.tenant_id = %(tenant)s AND m.id = %(id)s
