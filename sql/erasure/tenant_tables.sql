-- Erasure of a whole tenant (app/services/access/erasure/tenant.py): every table with a
-- tenant_id column in the schema of tenants, future ones too. Each is counted before the
-- tenant row goes (its foreign keys cascade) and checked empty after.
SELECT c.relname
  FROM pg_catalog.pg_attribute AS a
  JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid
 WHERE c.relnamespace = (SELECT relnamespace FROM pg_catalog.pg_class
                          WHERE oid = 'tenants'::regclass)
   AND c.relkind IN ('r', 'p')
   AND a.attname = 'tenant_id'
   AND NOT a.attisdropped
 ORDER BY c.relname
