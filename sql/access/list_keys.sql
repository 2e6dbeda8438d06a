-- API keys, oldest first (app/services/access/keys.py, list_keys), as the migrator: one
-- tenant's keys, or every key when the tenant is NULL; revoked ones only when asked;
-- with a cursor, only keys after its (created_at, prefix).
-- Parameters (positional, in order): tenant, tenant again (text or NULL); include
-- revoked (boolean); the cursor's created_at, created_at again (timestamptz or NULL)
-- and prefix; limit (or NULL).
SELECT prefix, name, tenant_id, scopes, created_by, created_at, expires_at,
       last_used_at, revoked_at
  FROM api_keys
 WHERE (%s::text IS NULL OR tenant_id = %s)
   AND (%s OR revoked_at IS NULL)
   AND (%s::timestamptz IS NULL OR (created_at, prefix) > (%s, %s))
 ORDER BY created_at, prefix
 LIMIT %s
