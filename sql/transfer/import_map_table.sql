-- Import (app/services/transfer/importer.py, _map_rows): the temporary map of a table's
-- old row numbers (the file's) to the new ones, gone at commit. The code composes in
-- {map}, the map's name (elephant_import_map_<table>).
-- Parameters: none.
CREATE TEMPORARY TABLE {map} (old bigint PRIMARY KEY, new bigint NOT NULL) ON COMMIT DROP
