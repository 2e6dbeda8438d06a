-- A new API key (app/services/access/keys.py, create_key), as the migrator: only the
-- hash of its secret is stored. Returns the key's columns in the order keys.py reads
-- them (the same list as list_keys.sql and revoke_key.sql).
-- Parameters (positional, in order): prefix, secret hash, name, tenant (NULL: an
-- all-tenant admin key), scopes (text[]), created_by, expires_at (or NULL).
INSERT INTO api_keys (prefix, secret_hash, name, tenant_id, scopes, created_by, expires_at)
VALUES (%s, %s, %s, %s, %s, %s, %s)
RETURNING prefix, name, tenant_id, scopes, created_by, created_at, expires_at,
          last_used_at, revoked_at
