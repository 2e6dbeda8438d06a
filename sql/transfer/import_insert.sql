-- Import (app/services/transfer/importer.py, _insert): every row of one table's section,
-- in file order, into the tenant's table, by set-based INSERT ... SELECT. The code
-- composes in, with psycopg.sql, the table, its columns written, each one's value
-- (app/services/transfer/importer.py, _value) and {rows}, the FROM clause of
-- sql/transfer/import_rows.sql. tenant_id is named here (Citus routes each row by it).
-- Parameters: tenant, section (the table's name), dropped (as import_rows.sql).
INSERT INTO {table} (tenant_id, {columns})
SELECT %(tenant)s, {values} {rows}
 WHERE s.line ->> 'table' = %(section)s
 ORDER BY s.n
