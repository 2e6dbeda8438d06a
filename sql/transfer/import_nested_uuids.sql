-- Import (app/services/transfer/references.py): the first uuid string below the top level
-- of a JSON column (a job's payload). Ids are read, and rewritten by --new-ids, at the top
-- level only, so one deeper would keep pointing at the row of the tenant the file came
-- from: refused.
-- Parameters (named): section, column (the JSON field), path (a jsonpath of every string
-- below the top level), uuid (the pattern of a uuid).
SELECT s.n, v #>> '{}'
  FROM elephant_import_rows AS s
 CROSS JOIN LATERAL jsonb_path_query(s.line -> 'row' -> %(column)s::text,
                                     %(path)s::jsonpath) AS v
 WHERE s.line ->> 'table' = %(section)s
   AND jsonb_typeof(s.line -> 'row' -> %(column)s::text) IN ('object', 'array')
   AND v #>> '{}' ~* %(uuid)s
 ORDER BY s.n
