-- Passages (app/services/memory/passages.py, store_note_passages): one passage of a long
-- note with its vector; one stored already is left (as in turn_passages.sql).
-- Parameters: tenant; memory (uuid); ordinal, start, end (int); vector.
INSERT INTO passages (tenant_id, memory_id, ordinal, char_start, char_end, embedding)
VALUES (%(tenant)s, %(memory)s, %(ordinal)s, %(start)s, %(end)s, %(vector)s)
    ON CONFLICT DO NOTHING
