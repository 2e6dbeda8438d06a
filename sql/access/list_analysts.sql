-- Analyst roles with the tenants each may read (app/services/access/analysts.py), the
-- role's settings as Postgres holds them now (ALTER ROLE ... SET, every database) and its
-- connection limit. Run as the migrator (the owner of analysts and analyst_grants).
-- Parameters (positional): a tenant (text) or NULL for every analyst, twice: with a
-- tenant, only the analysts that read that tenant and no other.
SELECT a.name, a.role_name, a.statement_timeout_seconds, a.created_by, a.created_at,
       coalesce(array_agg(g.tenant_id ORDER BY g.tenant_id)
                FILTER (WHERE g.tenant_id IS NOT NULL), '{}') AS tenants,
       (SELECT s.setconfig FROM pg_db_role_setting AS s
         WHERE s.setrole = r.oid AND s.setdatabase = 0) AS settings,
       r.rolconnlimit
  FROM analysts AS a
  LEFT JOIN pg_roles AS r ON r.rolname = a.role_name
  LEFT JOIN analyst_grants AS g ON g.role_name = a.role_name
 GROUP BY a.name, a.role_name, a.statement_timeout_seconds, a.created_by, a.created_at,
          r.oid, r.rolconnlimit
HAVING %s::text IS NULL
    OR coalesce(array_agg(g.tenant_id) FILTER (WHERE g.tenant_id IS NOT NULL), '{}')
       = ARRAY[%s::text]
 ORDER BY a.created_at, a.name
