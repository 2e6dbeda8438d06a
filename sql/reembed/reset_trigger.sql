-- The trigger that clears a row's new vector when what its text is made of changes
-- (app/services/ops/reembed/phases.py; the function is in sql/reembed/setup.sql). The
-- code composes in, with psycopg.sql, the columns the table's text depends on
-- (rows.TRIGGER_COLUMNS) and the table: memories, facts or passages.
CREATE TRIGGER elephant_reembed_reset BEFORE UPDATE OF {columns} ON {table}
    FOR EACH ROW EXECUTE FUNCTION elephant_reembed_reset()
