-- A page of the audit log, newest first (app/services/access/audit.py, entries), as the
-- migrator: one tenant's entries, or every entry when the tenant is NULL (operators);
-- with a cursor, only entries older than its (at, id).
-- Parameters (positional, in order): tenant, tenant again (text or NULL); the cursor's
-- at, at again (timestamptz or NULL) and id (bigint); limit; offset.
SELECT id, at, tenant_id, key_prefix, action, target, outcome, client, detail
  FROM audit_log
 WHERE (%s::text IS NULL OR tenant_id = %s)
   AND (%s::timestamptz IS NULL OR (at, id) < (%s, %s))
 ORDER BY at DESC, id DESC
 LIMIT %s OFFSET %s
