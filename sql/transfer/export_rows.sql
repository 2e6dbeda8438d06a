-- Export (app/services/transfer/export.py, _rows): each of the tenant's rows of one table
-- as its line of the export file, built by Postgres, in the table's physical order (an
-- import writes them in this order, so rows that tie in a search tie the same way in the
-- copy). The code composes in {table}, the table; the doubled brace is one closing brace
-- after psycopg.sql's format.
-- Parameters: prefix (the line's start, up to its row), dropped (text[], the columns left
-- out: tenant_id, generated columns, vectors not exported), tenant.
SELECT %(prefix)s || (to_jsonb(t) - %(dropped)s::text[])::text || '}}'
  FROM {table} AS t
 WHERE t.tenant_id = %(tenant)s
 ORDER BY t.ctid
