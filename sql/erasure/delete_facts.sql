-- Erasure (app/services/access/erasure/rows.py), step 4 of 13: the facts that go (named
-- by the target, derived from memories or conversations that go, or observations of
-- vertices that go), once nothing references them.
-- Parameters: tenant; facts (uuid[]).
DELETE FROM facts
 WHERE tenant_id = %(tenant)s AND id = ANY(%(facts)s::uuid[])
