-- One role's attributes for a backup (app/services/ops/backup/roles.py): whether it logs
-- in, inherits, may create roles or databases, replicate or bypass row-level security,
-- its connection limit and expiry, and its per-role settings (for every database, or
-- for this one: ALTER ROLE ... SET). Parameters: the role name (twice).
SELECT r.rolcanlogin, r.rolinherit, r.rolcreaterole, r.rolcreatedb, r.rolreplication,
       r.rolbypassrls, r.rolconnlimit, r.rolvaliduntil::text,  -- text: 'infinity' too
       coalesce((
           SELECT array_agg(setting ORDER BY setting)
           FROM pg_db_role_setting AS s, unnest(s.setconfig) AS setting
           WHERE s.setrole = r.oid
             AND s.setdatabase IN (0, (SELECT oid FROM pg_database
                                       WHERE datname = current_database()))
       ), '{}')
FROM pg_roles AS r
WHERE r.rolname = %s
