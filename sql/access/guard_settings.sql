-- The analyst guard: analyst roles whose settings (ALTER ROLE ... SET, which a role may
-- run on itself) differ from those recorded at creation, with every database where the
-- role has settings of its own (ALTER ROLE self IN DATABASE ... SET). Run as the migrator.
SELECT a.name, a.role_name, a.role_settings,
       ARRAY(SELECT d.datname::text
               FROM pg_db_role_setting AS s JOIN pg_database AS d ON d.oid = s.setdatabase
              WHERE s.setrole = r.oid AND s.setdatabase <> 0) AS databases
  FROM analysts AS a
  JOIN pg_roles AS r ON r.rolname = a.role_name
 WHERE a.role_settings IS NOT NULL
   AND ((SELECT s.setconfig FROM pg_db_role_setting AS s
          WHERE s.setrole = r.oid AND s.setdatabase = 0) IS DISTINCT FROM a.role_settings
        OR EXISTS (SELECT 1 FROM pg_db_role_setting AS s
                    WHERE s.setrole = r.oid AND s.setdatabase <> 0))
