-- Erasure (app/services/access/erasure/rows.py), step 2 of 13: feedback on the facts and
-- memories that go (it references them).
-- Parameters: tenant; facts, memories (uuid[]) the rows that go.
DELETE FROM feedback
 WHERE tenant_id = %(tenant)s
   AND (fact_id = ANY(%(facts)s::uuid[]) OR memory_id = ANY(%(memories)s::uuid[]))
