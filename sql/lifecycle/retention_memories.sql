-- Retention (app/services/lifecycle/retention.py): the memories of a source outside any
-- conversation (notes) last seen before the cut-off, oldest first.
-- Parameters: tenant, source, cutoff.
SELECT m.id FROM memories AS m
WHERE m.tenant_id = %(tenant)s AND m.source = %(source)s AND m.conversation_id IS NULL
  AND greatest(m.created_at, m.last_seen_at) < %(cutoff)s
ORDER BY m.created_at
