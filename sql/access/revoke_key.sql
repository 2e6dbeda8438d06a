-- Revoke an API key by its prefix (app/services/access/keys.py, revoke_key), as the
-- migrator; revoking twice keeps the first time. A tenant given limits it to that
-- tenant's keys (no row: not found). Returns the key's columns as create_key.sql does.
-- Parameters (positional, in order): prefix; tenant, tenant again (text or NULL).
UPDATE api_keys
   SET revoked_at = coalesce(revoked_at, now())
 WHERE prefix = %s AND (%s::text IS NULL OR tenant_id = %s)
RETURNING prefix, name, tenant_id, scopes, created_by, created_at, expires_at,
          last_used_at, revoked_at
