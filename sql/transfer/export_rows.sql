-- Export (app/services/transfer/export.py, _rows): each of the tenant's rows of one table
-- as its line of the export file, built by Postgres, in the order of its primary key
-- {order} (the table's physical order changes as rows are updated). An import writes
-- the rows in file order and numbers its row numbers in that order, and --new-ids keeps
-- the uuids' order, so the copy's export comes out in the same order, row for row. The
-- code composes in {table}, the table, {order}, its key's columns, and {row}, the row as
-- jsonb less the dropped columns (``to_jsonb(t) - %(dropped)s``), with a job's payload as
-- sql/transfer/export_job_ids.sql writes it; the doubled brace is one closing brace after
-- psycopg.sql's format.
-- Parameters: prefix (the line's start, up to its row), dropped (text[], the columns left
-- out: tenant_id, generated columns, vectors not exported), tenant.
SELECT %(prefix)s || ({row})::text || '}}'
  FROM {table} AS t
 WHERE t.tenant_id = %(tenant)s
 ORDER BY {order}
