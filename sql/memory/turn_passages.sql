-- Passages (app/services/memory/passages.py, store_turn_passages): one passage of a
-- stored turn with its vector, the turn found by its conversation and position. One
-- stored already is left: its only unique keys are (turn_id, ordinal) and
-- (memory_id, ordinal), which Citus widens with tenant_id, so no conflict target names
-- them (docs/scale-out.md).
-- Parameters: tenant; conversation (uuid); seq (int); ordinal, start, end (int: the
-- passage's place in the turn); vector.
INSERT INTO passages (tenant_id, turn_id, ordinal, char_start, char_end, embedding)
SELECT t.tenant_id, t.id, %(ordinal)s, %(start)s, %(end)s, %(vector)s
  FROM turns AS t
 WHERE t.tenant_id = %(tenant)s AND t.conversation_id = %(conversation)s
   AND t.seq = %(seq)s
    ON CONFLICT DO NOTHING
