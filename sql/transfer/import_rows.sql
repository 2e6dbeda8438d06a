-- Import (app/services/transfer/importer.py, _insert): the FROM clause the insert of a
-- table's rows and the map of its row numbers share: each staged line `s` of the
-- table's section as a row `r` of the table, less the fields not to be loaded. The code
-- composes in {table}, the table.
-- Parameters: dropped (text[], the fields left out: vectors made again here).
FROM elephant_import_rows AS s
CROSS JOIN LATERAL
      jsonb_populate_record(NULL::{table}, (s.line -> 'row') - %(dropped)s::text[]) AS r
