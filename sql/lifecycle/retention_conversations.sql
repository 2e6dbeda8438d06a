-- Retention (app/services/lifecycle/retention.py): the conversations of a source whose
-- last turn (or, with none, whose start) is older than the cut-off, oldest first.
-- Parameters: tenant, source, cutoff.
SELECT c.id FROM conversations AS c
WHERE c.tenant_id = %(tenant)s AND c.source = %(source)s
  AND greatest(c.created_at, (SELECT max(t.created_at) FROM turns AS t
                              WHERE t.tenant_id = c.tenant_id
                                AND t.conversation_id = c.id)) < %(cutoff)s
ORDER BY c.created_at
