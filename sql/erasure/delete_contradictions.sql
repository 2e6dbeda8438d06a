-- Erasure (app/services/access/erasure/rows.py), step 1 of 13: contradictions between
-- facts that go (either side), and, for a subject, those whose reason names them.
-- Deleted first: they reference the facts.
-- Parameters: tenant; facts (uuid[]) the facts that go; p the subject's names as a
-- whole-word regular expression, NULL when the target is not a subject.
DELETE FROM contradictions AS x
 WHERE x.tenant_id = %(tenant)s
   AND (x.older_fact_id = ANY(%(facts)s::uuid[])
        OR x.newer_fact_id = ANY(%(facts)s::uuid[])
        OR (%(p)s::text IS NOT NULL AND (x.reason ~* %(p)s)))
