-- The roles Elephant's database needs besides its owner (app/services/ops/backup/roles.py):
-- every role that owns an object of the database, holds a privilege on one or is named
-- by a row-level security policy (the app, worker, keyword and analyst group roles),
-- and the analysts' logins the database lists (passed in: the analysts table may be
-- absent from an old schema). Not every member of the analyst group: another database
-- of the server may have analysts of its own. Left out: superusers, the built-in pg_*
-- roles, PUBLIC (oid 0) and the connecting user (the migrator: the target's own takes
-- its place). Parameter: the analysts' role names (an array).
WITH named (oid) AS (
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
    UNION SELECT oid FROM pg_roles WHERE rolname = ANY(%s)
)
SELECT r.rolname
FROM pg_roles AS r
WHERE r.oid IN (SELECT oid FROM named)
  AND NOT r.rolsuper
  AND NOT starts_with(r.rolname, 'pg_')
  AND r.rolname <> current_user
ORDER BY r.rolname
