-- The size of the named tables with their indexes and TOAST (app/services/ops/stats.py,
-- storage): every tenant's rows, as the note of the report says.
-- Parameters (positional): the table names (text[]).
SELECT relname, pg_total_relation_size(oid)
  FROM pg_class
 WHERE relname = ANY(%s) AND relnamespace = 'public'::regnamespace
 ORDER BY 1
