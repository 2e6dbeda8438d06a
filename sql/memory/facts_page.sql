-- GET /facts, one page, newest first (app/services/memory/records.py), plus one row
-- (is there a next page?). The {keyset} slot takes fact_keyset.sql after a cursor and
-- no_keyset.sql otherwise (paged by offset then).
--   the filter's parameters (fact_listing.sql); limit, offset (int); after_at
--   (timestamptz) and after_id (uuid) with a cursor
SELECT
    {fact_record}
  FROM facts AS f
 WHERE
    {fact_listing}
    {keyset}
 ORDER BY f.created_at DESC, f.id DESC
 LIMIT %(limit)s + 1 OFFSET %(offset)s
