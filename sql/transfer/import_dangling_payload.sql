-- Import (app/services/transfer/references.py): the first uuid string at the top level of
-- a JSON column (a job's payload: memory_id, conversation_id) that names no row of the
-- file, set-based over the staged lines. An id there is a reference without a foreign
-- key; with --new-ids it follows its row (sql/transfer/import_remap_uuids.sql).
-- Parameters (named): section, column (the JSON field), uuid (the pattern of a uuid),
-- sections (text[]: the sections whose keys it may name).
SELECT s.n, e.key, e.value #>> '{}'
  FROM elephant_import_rows AS s
 CROSS JOIN LATERAL jsonb_each(
           CASE WHEN jsonb_typeof(s.line -> 'row' -> %(column)s::text) = 'object'
                THEN s.line -> 'row' -> %(column)s::text ELSE '{}'::jsonb END) AS e
 WHERE s.line ->> 'table' = %(section)s
   AND jsonb_typeof(e.value) = 'string'
   AND e.value #>> '{}' ~* %(uuid)s
   AND NOT EXISTS (SELECT 1 FROM elephant_import_keys AS k
                    WHERE k.section = ANY(%(sections)s::text[])
                      AND k.key = e.value #>> '{}')
 ORDER BY s.n
 LIMIT 1
