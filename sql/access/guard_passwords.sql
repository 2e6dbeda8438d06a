-- The analyst guard: analyst roles whose password verifier is no longer the one set at
-- creation (a role may change its own password). Needs pg_authid: a superuser migrator.
SELECT a.name, a.role_name, a.verifier
  FROM analysts AS a
  JOIN pg_authid AS p ON p.rolname = a.role_name
 WHERE a.verifier IS NOT NULL
   AND p.rolpassword IS DISTINCT FROM a.verifier
