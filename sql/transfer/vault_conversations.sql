-- Vault export (app/services/transfer/vault.py): every conversation of the tenant with its
-- turns, a row per turn (a conversation without turns once, its turn columns null), by
-- session date, then turn by turn; streamed.
-- Parameters, in order: tenant.
SELECT c.id, c.external_id, c.source, c.session_date, c.created_at,
       t.seq, t.speaker, t.text, t.occurred_at
FROM conversations AS c
LEFT JOIN turns AS t ON t.tenant_id = c.tenant_id AND t.conversation_id = c.id
WHERE c.tenant_id = %s
ORDER BY c.session_date NULLS LAST, c.created_at, c.id, t.seq
