-- The roles Elephant's database needs besides its owner (app/services/ops/backup/roles.py):
-- every role that owns an object of the database, holds a privilege on one or is named
-- by a row-level security policy, and, recursively, the members of those roles (the
-- analysts' logins are members of the analyst group). Left out: superusers, the
-- built-in pg_* roles, PUBLIC (oid 0) and the connecting user (the migrator: the
-- target's own takes its place). No parameters.
WITH RECURSIVE named (oid) AS (
    SELECT relowner FROM pg_class WHERE relnamespace <> 'pg_catalog'::regnamespace
    UNION SELECT proowner FROM pg_proc WHERE pronamespace <> 'pg_catalog'::regnamespace
    UNION SELECT nspowner FROM pg_namespace
    UNION SELECT (aclexplode(relacl)).grantee FROM pg_class WHERE relacl IS NOT NULL
    UNION SELECT (aclexplode(attacl)).grantee FROM pg_attribute WHERE attacl IS NOT NULL
    UNION SELECT (aclexplode(nspacl)).grantee FROM pg_namespace WHERE nspacl IS NOT NULL
    UNION SELECT (aclexplode(proacl)).grantee FROM pg_proc WHERE proacl IS NOT NULL
    UNION SELECT (aclexplode(typacl)).grantee FROM pg_type WHERE typacl IS NOT NULL
    UNION SELECT (aclexplode(defaclacl)).grantee FROM pg_default_acl
    UNION SELECT unnest(polroles) FROM pg_policy
),
needed (oid) AS (
    SELECT oid FROM named
    UNION SELECT m.member FROM pg_auth_members AS m JOIN needed AS n ON m.roleid = n.oid
)
SELECT r.rolname
FROM pg_roles AS r
WHERE r.oid IN (SELECT oid FROM needed)
  AND NOT r.rolsuper
  AND r.rolname NOT LIKE 'pg\_%'
  AND r.rolname <> current_user
ORDER BY r.rolname
