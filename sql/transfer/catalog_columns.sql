-- Export catalogue (app/services/transfer/catalog.py): the columns of the given tables in
-- their order: name, type, not null, generated, identity.
-- Parameters, in order: tables (text[]).
SELECT c.relname::text, a.attname::text, t.typname::text, a.attnotnull,
       a.attgenerated <> '', a.attidentity <> ''
FROM pg_catalog.pg_attribute AS a
JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid
JOIN pg_catalog.pg_type AS t ON t.oid = a.atttypid
WHERE c.relname = ANY(%s) AND c.relnamespace = (SELECT relnamespace FROM pg_catalog.pg_class
                                               WHERE oid = 'tenants'::regclass)
  AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY c.relname, a.attnum
