-- Export catalogue (app/services/transfer/catalog.py): primary keys, foreign keys and
-- unique constraints (natural keys) of the given tables: kind, the table referenced, the
-- columns and the columns referenced, in order.
-- Parameters, in order: tables (text[]).
SELECT c.relname::text, k.contype::text, f.relname::text,
       ARRAY(SELECT a.attname::text FROM unnest(k.conkey) WITH ORDINALITY AS u (n, o)
             JOIN pg_catalog.pg_attribute AS a ON a.attrelid = k.conrelid AND a.attnum = u.n
             ORDER BY u.o),
       ARRAY(SELECT a.attname::text FROM unnest(k.confkey) WITH ORDINALITY AS u (n, o)
             JOIN pg_catalog.pg_attribute AS a ON a.attrelid = k.confrelid AND a.attnum = u.n
             ORDER BY u.o)
FROM pg_catalog.pg_constraint AS k
JOIN pg_catalog.pg_class AS c ON c.oid = k.conrelid
LEFT JOIN pg_catalog.pg_class AS f ON f.oid = k.confrelid
WHERE c.relname = ANY(%s) AND k.contype IN ('p', 'f', 'u')
  AND c.relnamespace = (SELECT relnamespace FROM pg_catalog.pg_class
                        WHERE oid = 'tenants'::regclass)
ORDER BY c.relname, k.conname
