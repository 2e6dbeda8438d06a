-- One fact's record (app/services/memory/records.py, GET /facts/{id}).
--   tenant (text); id (uuid)
SELECT
    {fact_record}
  FROM facts AS f
 WHERE f.tenant_id = %(tenant)s AND f.id = %(id)s
