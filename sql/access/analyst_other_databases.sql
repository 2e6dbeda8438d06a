-- The other databases of the cluster where an analyst role owns something or holds a
-- privilege (pg_shdepend): it may log in to any database that lets PUBLIC connect and
-- make large objects there, which would keep DROP ROLE from succeeding. Run as the
-- migrator (app/services/access/analysts.py, revoke). Parameter: the role's name.
SELECT DISTINCT d.datname::text
  FROM pg_shdepend AS s
  JOIN pg_database AS d ON d.oid = s.dbid
  JOIN pg_roles AS r ON r.oid = s.refobjid
 WHERE s.refclassid = 'pg_authid'::regclass
   AND r.rolname = %s
   AND d.datname <> current_database()
 ORDER BY 1
