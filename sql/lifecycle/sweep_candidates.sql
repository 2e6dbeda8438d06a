-- Dedup sweep (app/services/lifecycle/sweep.py): a batch of the tenant's notes from the
-- cursor on, oldest first, and whether the gate's decision on each was forced (a forced
-- note is never merged).
-- Parameters: tenant, since (the cursor), batch.
SELECT m.id::text, m.text, m.source, m.embedding, m.created_at,
       EXISTS (SELECT 1 FROM admission_log AS a
               WHERE a.tenant_id = m.tenant_id AND a.memory_id = m.id
                 AND a.decision = 'forced') AS forced
FROM memories AS m
WHERE m.tenant_id = %(tenant)s AND m.kind = 'note' AND m.created_at >= %(since)s
ORDER BY m.created_at, m.id
LIMIT %(batch)s
