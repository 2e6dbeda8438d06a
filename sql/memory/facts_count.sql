-- GET /facts ``total``: every fact the filter matches (app/services/memory/records.py).
--   the filter's parameters (fact_listing.sql)
SELECT count(*)
  FROM facts AS f
 WHERE
    {fact_listing}
