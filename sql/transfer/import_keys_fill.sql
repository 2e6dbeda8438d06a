-- Import (app/services/transfer/references.py): the keys of one section's rows in the
-- file (its single-column primary key, or a graph entity's key) into elephant_import_keys.
-- Parameters (named): section, column (the key's field in each row).
INSERT INTO elephant_import_keys (section, key)
SELECT %(section)s, line -> 'row' ->> %(column)s
  FROM elephant_import_rows
 WHERE line ->> 'table' = %(section)s
   AND line -> 'row' ->> %(column)s IS NOT NULL
    ON CONFLICT DO NOTHING
