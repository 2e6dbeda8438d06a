-- The key behind a console session (app/services/access/console_sessions.py): the
-- session's key and whether it still holds (revoked, expired), read through the
-- SECURITY DEFINER function elephant_console_session, as the app role.
-- Parameters (positional): the hash of the session token (text).
SELECT key_id, prefix, name, tenant_id, scopes, key_expires_at, revoked_at
  FROM elephant_console_session(%s)
