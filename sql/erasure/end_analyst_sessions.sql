-- Erasure of a whole tenant (app/services/access/erasure/tenant.py): before its graph
-- and rows are dropped, end the sessions of the analysts granted that tenant. They are
-- losing it, and an open transaction of theirs holding a lock on the tenant's graph
-- would otherwise make the erasure wait. Waits up to 2 s for each to exit; returns the
-- pids signalled. Needs the right to signal them (a superuser, or pg_signal_backend).
-- Parameters: tenant.
SELECT a.pid, pg_terminate_backend(a.pid, 2000)
  FROM pg_stat_activity AS a
 WHERE a.pid <> pg_backend_pid()
   AND a.usename::text IN (SELECT g.role_name FROM analyst_grants AS g
                            WHERE g.tenant_id = %(tenant)s)
