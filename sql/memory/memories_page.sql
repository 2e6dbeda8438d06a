-- GET /memories, one page, newest first (app/services/memory/records.py), plus one row
-- (is there a next page?). The {keyset} slot takes memory_keyset.sql after a cursor
-- and no_keyset.sql otherwise (paged by offset then).
--   the filter's parameters (memory_listing.sql); limit, offset (int); after_at
--   (timestamptz) and after_id (uuid) with a cursor
SELECT
    {memory_record}
  FROM memories AS m
  LEFT JOIN conversations AS c ON c.tenant_id = m.tenant_id AND c.id = m.conversation_id
 WHERE
    {memory_listing}
    {keyset}
 ORDER BY m.created_at DESC, m.id DESC
 LIMIT %(limit)s + 1 OFFSET %(offset)s
