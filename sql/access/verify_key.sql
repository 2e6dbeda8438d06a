-- The reach of a presented API key (app/services/access/auth.py, authenticate).
-- The app role cannot read api_keys: elephant_verify_key, a SECURITY DEFINER function,
-- compares the presented key's SHA-256 with the stored one itself and returns the key's
-- name, tenant, scopes, expiry and revocation only when they match (no row otherwise,
-- never the hash); it also records the key's use (at most once a minute).
-- Parameters (positional): the key's prefix, the SHA-256 (hex) of the whole key, the
-- client address.
SELECT id, name, tenant_id, scopes, expires_at, revoked_at
  FROM elephant_verify_key(%s, %s, %s)
