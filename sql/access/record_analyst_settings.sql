-- Record an analyst role's settings (ALTER ROLE ... SET) as they stand at the end of its
-- creation: the analyst guard (app/services/access/analyst_guard.py) restores them.
-- Run as the migrator. Parameter: the role's name.
UPDATE analysts AS a
   SET role_settings = (SELECT s.setconfig
                          FROM pg_db_role_setting AS s
                          JOIN pg_roles AS r ON r.oid = s.setrole
                         WHERE r.rolname = a.role_name AND s.setdatabase = 0)
 WHERE a.role_name = %s
