-- The stored key behind a presented API key (app/services/access/auth.py, authenticate).
-- The app role cannot read api_keys: elephant_lookup_key, a SECURITY DEFINER function,
-- returns the one row of a prefix, and the caller compares the secret's hash itself.
-- Parameters (positional): the key's prefix (text).
SELECT id, secret_hash, name, tenant_id, scopes, expires_at, revoked_at, last_used_at
  FROM elephant_lookup_key(%s)
