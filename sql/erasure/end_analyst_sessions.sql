-- Erasure of a whole tenant (app/services/access/erasure/tenant.py): before its graph
-- and rows are dropped, end the sessions of analysts granted that tenant (they are
-- losing it) and of any analyst holding a lock on the tenant's graph schema (it has no
-- business there): an open transaction of theirs would otherwise make the erasure wait
-- for its DROP. Waits up to 2 s for each to exit; returns the pids signalled. Needs the
-- right to signal them (a superuser, or a member of pg_signal_backend).
-- Parameters: tenant, graph (the tenant's AGE graph schema name).
SELECT a.pid, pg_terminate_backend(a.pid, 2000)
  FROM pg_stat_activity AS a
 WHERE a.pid <> pg_backend_pid()
   AND a.usename::text IN (SELECT role_name FROM analysts)
   AND (a.usename::text IN (SELECT g.role_name FROM analyst_grants AS g
                             WHERE g.tenant_id = %(tenant)s)
        OR EXISTS (SELECT 1
                     FROM pg_locks AS l
                     JOIN pg_class AS c ON c.oid = l.relation
                     JOIN pg_namespace AS n ON n.oid = c.relnamespace
                    WHERE l.pid = a.pid AND l.locktype = 'relation'
                      AND n.nspname = %(graph)s))
