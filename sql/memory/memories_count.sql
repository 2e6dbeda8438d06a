-- GET /memories ``total``: every memory the filter matches (app/services/memory/records.py).
--   the filter's parameters (memory_listing.sql)
SELECT count(*)
  FROM memories AS m
  LEFT JOIN conversations AS c ON c.tenant_id = m.tenant_id AND c.id = m.conversation_id
 WHERE
    {memory_listing}
