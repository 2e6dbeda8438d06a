-- Erasure (app/services/access/erasure/rows.py), step 8 of 13: the memories that go
-- (windows holding a turn that goes, notes naming the subject, those of a conversation
-- or source that goes, or asked for by id).
-- Parameters: tenant; memories (uuid[]).
DELETE FROM memories
 WHERE tenant_id = %(tenant)s AND id = ANY(%(memories)s::uuid[])
