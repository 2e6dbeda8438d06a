"""The cluster-level roles a backup carries, and their re-creation on restore.

pg_dump of one database dumps the grants, policies and owners that name roles, but not
the roles: they belong to the cluster. A backup records, as data, every role the
database names (sql/backup/role_names.sql: the app, worker, keyword and analyst group
roles, each analyst's login, any other grantee or owner), with its attributes, its
per-role settings, its password verifier when the backup runs as a superuser (an
analyst's SCRAM verifier: the same password logs in after a restore), and the
memberships among them. A restore creates the roles the target lacks and leaves the
ones it has as they are (roles are shared by every database of a server).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from app.db.resources import load_sql
from app.db.runtime import Connection


@dataclass(frozen=True, slots=True, kw_only=True)
class RoleSpec:
    """One role as a backup records it."""

    name: str
    login: bool
    inherit: bool
    createrole: bool = False
    createdb: bool = False
    replication: bool = False
    bypassrls: bool = False
    connection_limit: int = -1
    valid_until: str | None = None
    password: str | None = None  # a SCRAM/MD5 verifier, never a clear password
    settings: list[str] = field(default_factory=list)  # "name=value"


@dataclass(frozen=True, slots=True, kw_only=True)
class Membership:
    group: str
    member: str
    admin: bool = False
    inherit: bool = True
    set: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class RoleSet:
    roles: list[RoleSpec]
    memberships: list[Membership]
    passwords: bool  # whether verifiers could be read (a superuser made the backup)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RoleSet:
        return cls(
            roles=[RoleSpec(**role) for role in data["roles"]],
            memberships=[Membership(**member) for member in data["memberships"]],
            passwords=bool(data["passwords"]),
        )


def collect(conn: Connection) -> RoleSet:
    """Every role the database needs, read on ``conn`` (the backup's snapshot)."""
    listed = conn.execute(load_sql("backup/role_names.sql"), (_analysts(conn),)).fetchall()
    names = [str(row[0]) for row in listed]
    verifiers = _verifiers(conn, names)
    roles = []
    for name in names:
        row = conn.execute(load_sql("backup/role_attributes.sql"), (name,)).fetchone()
        assert row is not None
        login, inherit, createrole, createdb, replication, bypass, limit, until, settings = row
        roles.append(
            RoleSpec(
                name=name,
                login=login,
                inherit=inherit,
                createrole=createrole,
                createdb=createdb,
                replication=replication,
                bypassrls=bypass,
                connection_limit=limit,
                valid_until=until,
                password=verifiers.get(name) if verifiers is not None else None,
                settings=list(settings),
            )
        )
    rows = conn.execute(load_sql("backup/role_memberships.sql"), (names, names)).fetchall()
    memberships = [
        Membership(group=g, member=m, admin=admin, inherit=inherit, set=set_)
        for g, m, admin, inherit, set_ in rows
    ]
    return RoleSet(roles=roles, memberships=memberships, passwords=verifiers is not None)


def _analysts(conn: Connection) -> list[str]:
    """The analysts' login roles the database lists (none before migration 0015)."""
    exists = conn.execute("SELECT to_regclass('public.analysts') IS NOT NULL").fetchone()
    if exists is None or not exists[0]:
        return []
    rows = conn.execute("SELECT role_name FROM public.analysts ORDER BY 1").fetchall()
    return [str(row[0]) for row in rows]


def _verifiers(conn: Connection, names: list[str]) -> dict[str, str] | None:
    """Password verifiers by role (pg_authid: superusers only), or None where unreadable."""
    try:
        with conn.transaction():
            rows = conn.execute(
                "SELECT rolname, rolpassword FROM pg_authid WHERE rolname = ANY(%s)", (names,)
            ).fetchall()
    except psycopg.errors.InsufficientPrivilege:
        return None
    return {str(name): str(secret) for name, secret in rows if secret is not None}


def missing(conn: Connection, wanted: RoleSet) -> list[str]:
    """The roles of ``wanted`` the target server does not have."""
    names = [role.name for role in wanted.roles]
    have = {
        str(row[0])
        for row in conn.execute(
            "SELECT rolname FROM pg_roles WHERE rolname = ANY(%s)", (names,)
        ).fetchall()
    }
    return [name for name in names if name not in have]


# Settings whose value is a list: one literal per item, or Postgres reads the whole
# text as one item (an analyst's search_path "analyst_<name>, public" would become a
# single schema of that name).
LIST_SETTINGS = frozenset(
    {"search_path", "temp_tablespaces", "session_preload_libraries", "local_preload_libraries"}
)


def _setting_value(key: str, value: str) -> sql.Composable:
    """A role setting as pg_db_role_setting holds it, back in an ALTER ROLE ... SET."""
    if key.lower() not in LIST_SETTINGS:
        return sql.Literal(value)
    items = [item.strip() for item in value.split(",")]
    unquoted = [
        item[1:-1].replace('""', '"') if len(item) > 1 and item[0] == item[-1] == '"' else item
        for item in items
    ]
    return sql.SQL(", ").join(sql.Literal(item) for item in unquoted)


def create(conn: Connection, wanted: RoleSet, names: list[str]) -> None:
    """Create the roles ``names`` of ``wanted`` with their attributes, settings and the
    memberships among them, in the caller's transaction. A migrator that is not a
    superuser is made a member of each (as the migrations do), so it may own and grant."""
    chosen = [role for role in wanted.roles if role.name in names]
    for role in chosen:
        conn.execute(_create_statement(role))
        for setting in role.settings:
            key, _, value = setting.partition("=")
            conn.execute(
                sql.SQL("ALTER ROLE {} SET {} = {}").format(
                    sql.Identifier(role.name), sql.Identifier(key), _setting_value(key, value)
                )
            )
    options = _grant_options(conn)
    for member in wanted.memberships:
        if member.group in names or member.member in names:
            conn.execute(options(member))
    superuser = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
    row = superuser.fetchone()
    if row is not None and not row[0]:
        for role in chosen:
            conn.execute(sql.SQL("GRANT {} TO CURRENT_USER").format(sql.Identifier(role.name)))


def _grant_options(conn: Connection) -> Callable[[Membership], sql.Composed]:
    """GRANT group TO member with its options: ADMIN, INHERIT and SET from PostgreSQL 16
    on, ADMIN OPTION alone before (where a member inherits and may SET ROLE)."""
    row = conn.execute("SELECT current_setting('server_version_num')::int").fetchone()
    modern = row is not None and int(row[0]) >= 160000

    def grant(member: Membership) -> sql.Composed:
        names = (sql.Identifier(member.group), sql.Identifier(member.member))
        if not modern:
            admin = " WITH ADMIN OPTION" if member.admin else ""
            return sql.SQL("GRANT {} TO {}" + admin).format(*names)
        flags = [("ADMIN", member.admin), ("INHERIT", member.inherit), ("SET", member.set)]
        options = ", ".join(f"{name} {'TRUE' if on else 'FALSE'}" for name, on in flags)
        return sql.SQL("GRANT {} TO {} WITH " + options).format(*names)

    return grant


def _create_statement(role: RoleSpec) -> sql.Composed:
    flags = [
        "LOGIN" if role.login else "NOLOGIN",
        "INHERIT" if role.inherit else "NOINHERIT",
        "CREATEROLE" if role.createrole else "NOCREATEROLE",
        "CREATEDB" if role.createdb else "NOCREATEDB",
        "REPLICATION" if role.replication else "NOREPLICATION",
        "BYPASSRLS" if role.bypassrls else "NOBYPASSRLS",
        "NOSUPERUSER",
    ]
    parts = [
        sql.SQL("CREATE ROLE {} ").format(sql.Identifier(role.name)),
        sql.SQL(" ".join(flags)),
        sql.SQL(" CONNECTION LIMIT {}").format(sql.Literal(role.connection_limit)),
    ]
    if role.password is not None:
        parts.append(sql.SQL(" PASSWORD {}").format(sql.Literal(role.password)))
    if role.valid_until is not None:
        parts.append(sql.SQL(" VALID UNTIL {}").format(sql.Literal(role.valid_until)))
    return sql.Composed(parts)


def drop(conn: Connection, names: list[str]) -> None:
    """Drop roles a failed restore created (nothing else may be left behind)."""
    for name in reversed(names):
        with contextlib.suppress(psycopg.Error), conn.transaction():
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))
