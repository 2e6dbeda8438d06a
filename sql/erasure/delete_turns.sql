-- Erasure (app/services/access/erasure/rows.py), step 9 of 13: the turns that go (naming
-- the subject, or of a conversation that goes), once their windows and passages are gone.
-- Parameters: tenant; turns (bigint[]).
DELETE FROM turns
 WHERE tenant_id = %(tenant)s AND id = ANY(%(turns)s)
