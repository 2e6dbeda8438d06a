-- Export catalogue (app/services/transfer/catalog.py): the tenant tables, every table of
-- the application's schema (tenants') with a tenant_id column. Read from the catalogue,
-- no tenant rows.
-- Parameters: none.
SELECT c.relname::text FROM pg_catalog.pg_attribute AS a
JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid
WHERE c.relnamespace = (SELECT relnamespace FROM pg_catalog.pg_class
                        WHERE oid = 'tenants'::regclass)
  AND c.relkind IN ('r', 'p') AND a.attname = 'tenant_id' AND NOT a.attisdropped
ORDER BY 1
