-- Import (app/services/transfer/references.py): the first row of a section whose
-- reference (a foreign key, or an id without one such as access_stats.item_id) names no
-- row of the target section in the file, set-based over the staged lines. The tenant
-- imported into is empty, so a value the file does not bring points at another
-- tenant's row, or at nothing.
-- Parameters (named): section, column (the referencing field), target (the section
-- referenced), when_field and when_value (only rows whose when_field is when_value; both
-- NULL: every row), e.g. access_stats' item_id names memories when item_kind = 'memory'.
SELECT s.n, s.line -> 'row' ->> %(column)s
  FROM elephant_import_rows AS s
 WHERE s.line ->> 'table' = %(section)s
   AND s.line -> 'row' ->> %(column)s IS NOT NULL
   AND (%(when_field)s::text IS NULL
        OR s.line -> 'row' ->> %(when_field)s::text = %(when_value)s::text)
   AND NOT EXISTS (SELECT 1 FROM elephant_import_keys AS k
                    WHERE k.section = %(target)s
                      AND k.key = s.line -> 'row' ->> %(column)s)
 ORDER BY s.n
