-- Import (app/services/transfer/importer.py, _map_rows): old row number -> new, for a
-- table whose row numbers other tables point at (passages at turns), joined on a unique
-- key of the table without the number (turns: conversation and seq). The code composes
-- in, with psycopg.sql, the map, the row-number column {id}, {rows} (the FROM clause of
-- sql/transfer/import_rows.sql), the table and {matches}, the natural key's columns
-- equal to their values from the file's row.
-- Parameters: tenant, section (the table's name), dropped (as import_rows.sql).
INSERT INTO {map} (old, new)
SELECT r.{id}, t.{id} {rows}
  JOIN {table} AS t ON t.tenant_id = %(tenant)s AND {matches}
 WHERE s.line ->> 'table' = %(section)s
