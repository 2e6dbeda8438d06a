-- The comment on a table's embedding column, read at the swap so the new column gets it
-- too (app/services/ops/reembed/phases.py). Parameters: the table name, twice.
SELECT col_description(%s::regclass, attnum)
  FROM pg_attribute
 WHERE attrelid = %s::regclass AND attname = 'embedding'
