-- Import (app/services/transfer/importer.py, _keys): the field names the rows of one
-- section of the file have (a column the file lacks takes its default; one this database
-- lacks is an error naming it).
-- Parameters, in order: the section (a table name).
SELECT DISTINCT jsonb_object_keys(line -> 'row')
  FROM elephant_import_rows
 WHERE line ->> 'table' = %s
