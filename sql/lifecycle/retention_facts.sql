-- Retention (app/services/lifecycle/retention.py): the facts of a source from no memory
-- and no conversation (told directly, or observations) made before the cut-off, oldest
-- first.
-- Parameters: tenant, source, cutoff.
SELECT f.id FROM facts AS f
WHERE f.tenant_id = %(tenant)s AND f.source = %(source)s AND f.created_at < %(cutoff)s
  AND f.memory_id IS NULL AND f.conversation_id IS NULL
ORDER BY f.created_at
