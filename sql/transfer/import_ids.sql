-- Import with new ids (app/services/transfer/importer.py, _map_ids): a new uuid for each
-- uuid key of one table's rows in the file (a uuid seen already keeps its first one).
-- Parameters, in order: the table's uuid key column; the table (its section).
INSERT INTO elephant_import_ids (old)
SELECT line -> 'row' ->> %s
  FROM elephant_import_rows
 WHERE line ->> 'table' = %s
    ON CONFLICT (old) DO NOTHING
