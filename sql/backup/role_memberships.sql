-- Memberships among the roles a backup carries (app/services/ops/backup/roles.py): the
-- group, the member and the member's options. Parameter: the role names (an array).
SELECT g.rolname, m.rolname, a.admin_option, a.inherit_option, a.set_option
FROM pg_auth_members AS a
JOIN pg_roles AS g ON g.oid = a.roleid
JOIN pg_roles AS m ON m.oid = a.member
WHERE g.rolname = ANY(%s) AND m.rolname = ANY(%s)
ORDER BY 1, 2
