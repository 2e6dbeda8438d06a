-- Erasure (app/services/access/erasure/rows.py), step 6 of 13: the passages (searchable
-- parts of long turns and notes) of the turns and memories that go.
-- Parameters: tenant; turns (bigint[]); memories (uuid[]).
DELETE FROM passages
 WHERE tenant_id = %(tenant)s
   AND (turn_id = ANY(%(turns)s) OR memory_id = ANY(%(memories)s::uuid[]))
