-- Vault export (app/services/transfer/vault.py): the tenant's notes in time order (the
-- event's time, or when stored); streamed.
-- Parameters, in order: tenant.
SELECT text, source, coalesce(event_at, created_at) AS at FROM memories
WHERE tenant_id = %s AND kind = 'note' ORDER BY at, id
