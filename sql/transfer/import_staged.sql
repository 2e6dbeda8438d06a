-- Import (app/services/transfer/importer.py, _staged): the rows of one section of the
-- file, a page at a time in file order, from the import's temporary table of staged
-- lines (elephant_import_rows: the file's line number and the line as jsonb).
-- Parameters, in order: the section (a table name, or graph_entities / graph_relations);
-- the line number after which the page starts; the page size.
SELECT n, line -> 'row'
  FROM elephant_import_rows
 WHERE line ->> 'table' = %s AND n > %s
 ORDER BY n
 LIMIT %s
