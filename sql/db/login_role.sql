-- Who a role URL (app_url, worker_url, a replica behind the pooler) logs in as, and
-- whether that role is a superuser or bypasses row-level security (app/db/runtime.py):
-- the app role must be neither. No parameters.
SELECT session_user, current_user, r.rolsuper, r.rolbypassrls
  FROM pg_roles AS r
 WHERE r.rolname = session_user
