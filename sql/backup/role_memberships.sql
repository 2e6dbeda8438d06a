-- Memberships among the roles a backup carries (app/services/ops/backup/roles.py): the
-- group, the member and the member's options (inherit_option and set_option exist from
-- PostgreSQL 16 on: read through to_jsonb, they are NULL on 15, where a member inherits
-- and may SET ROLE). Parameter: the role names (an array, twice).
SELECT g.rolname, m.rolname, a.admin_option,
       coalesce((to_jsonb(a) ->> 'inherit_option')::boolean, true),
       coalesce((to_jsonb(a) ->> 'set_option')::boolean, true)
FROM pg_auth_members AS a
JOIN pg_roles AS g ON g.oid = a.roleid
JOIN pg_roles AS m ON m.oid = a.member
WHERE g.rolname = ANY(%s) AND m.rolname = ANY(%s)
ORDER BY 1, 2
