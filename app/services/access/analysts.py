"""SQL analysts: LOGIN roles that read the tenants they are granted, and nothing else.

An analyst is a Postgres role in the analyst group (``<app role>_analyst``, migration
0015) with a row in ``analysts`` and one ``analyst_grants`` row per tenant. It reads
only its own schema ``analyst_<name>`` (analyst_fence.py, migration 0017): views that
name its tenants as constants, so neither a setting the session changes
(``elephant.tenant_id``) nor a plan (EXPLAIN) reaches another tenant's rows; it holds
no privilege on the tables of ``public``. The role is created read-only with a statement
timeout, and it can execute none of the key, session, job or erasure functions. Run as
the migrator (it needs CREATEROLE); every creation and revocation is audited.
"""

from __future__ import annotations

import contextlib
import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.config import validate_tenant_id
from app.config.database import analyst_group
from app.db.resources import load_sql
from app.db.runtime import Connection, Database
from app.errors import Conflict, Forbidden, InvalidInput, NotFound
from app.services.access import analyst_fence, audit
from app.services.access.auth import Principal

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,29}$")
PASSWORD_BYTES = 24
MAX_TENANTS = 100
CREATED_NOTE = "store this password now: it is not shown again"
# Limits every analyst role gets (docs/security.md, "SQL analysts"). A session may raise
# the USERSET ones for itself: the analyst guard (analyst_guard.py) enforces the timeouts
# from the server. temp_file_limit is superuser-only, so the role's default holds.
IDLE_IN_TRANSACTION_SECONDS = 60
WORK_MEM = "16MB"
TEMP_FILE_LIMIT = "256MB"
CONNECTION_LIMIT = 10


def role_name(app_role: str, name: str) -> str:
    """An analyst's LOGIN role: ``<app role>_analyst_<name>``, within 63 characters."""
    return f"{app_role[:24]}_analyst_{name}"


class AnalystIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        description="Lower-case letters, digits and _, starting with a letter (1-30).",
        min_length=1,
        max_length=30,
    )
    tenants: list[str] = Field(
        min_length=1, max_length=MAX_TENANTS, description="The tenants the analyst reads."
    )
    statement_timeout_seconds: int = Field(
        30, ge=1, le=3600, description="Longest statement the analyst may run."
    )

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME_PATTERN.match(value):
            raise ValueError("must be 1-30 lower-case letters, digits or _, starting with a letter")
        return value

    @field_validator("tenants")
    @classmethod
    def _tenants(cls, value: list[str]) -> list[str]:
        return sorted({validate_tenant_id(tenant) for tenant in value})


@dataclass(frozen=True, slots=True, kw_only=True)
class AnalystInfo:
    """An analyst role and what it reads (never its password: Postgres keeps a SCRAM
    verifier)."""

    name: str
    role: str
    tenants: list[str]
    statement_timeout_seconds: int
    created_by: str
    created_at: datetime
    # The role's settings as Postgres holds them now, and its connection limit.
    limits: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatedAnalyst(AnalystInfo):
    """A new analyst: the only result that holds the password (kept out of its repr)."""

    password: str = field(repr=False)
    connection: str  # where it logs in, without the password
    note: str = CREATED_NOTE


@dataclass(frozen=True, slots=True)
class AnalystList:
    items: list[AnalystInfo]


def _info(row: tuple[Any, ...]) -> AnalystInfo:
    name, role, timeout, created_by, created_at, tenants, settings, connection_limit = row
    limits = dict(item.split("=", 1) for item in settings or ())
    limits.pop("search_path", None)
    if connection_limit is not None:  # None: the role is gone (revoke drops the rest)
        limits["connection_limit"] = str(connection_limit)
    return AnalystInfo(
        name=name,
        role=role,
        tenants=list(tenants),
        statement_timeout_seconds=timeout,
        created_by=created_by,
        created_at=created_at,
        limits=limits,
    )


def role_settings(statement_timeout_seconds: int) -> list[tuple[str, str]]:
    """The settings (ALTER ROLE ... SET) an analyst role is created with."""
    return [
        ("statement_timeout", f"{statement_timeout_seconds}s"),
        ("default_transaction_read_only", "on"),
        ("idle_in_transaction_session_timeout", f"{IDLE_IN_TRANSACTION_SECONDS}s"),
        ("work_mem", WORK_MEM),
    ]


def check_reach(principal: Principal, tenants: list[str]) -> None:
    """A tenant's admin key manages analysts of its own tenant only."""
    if principal.tenant is not None and set(tenants) != {principal.tenant}:
        raise Forbidden("this API key may only manage analysts of its own tenant")


def connection_string(db: Database, role: str) -> str:
    """Where the analyst logs in (psql, Metabase, Grafana): the server and database of
    Elephant's own connection, the analyst's user, no password."""
    if db.embedded is not None and db.embedded.tcp:
        params = conninfo_to_dict(db.embedded.tcp_conninfo(role, db.settings.embedded.database))
    else:
        params = conninfo_to_dict(db.admin_conninfo())
    params["user"] = role
    params.pop("password", None)
    return make_conninfo(**{k: str(v) for k, v in params.items() if v is not None})


def role_of(db: Database, name: str) -> str:
    """The LOGIN role of the analyst named ``name`` (NotFound if there is none)."""
    for analyst in list_analysts(db):
        if analyst.name == name:
            return analyst.role
    raise NotFound(f"no analyst named {name!r}: create it with `elephant analysts create`")


def login_conninfo(db: Database, role: str) -> str:
    """Where this machine logs in as the analyst: the embedded server's socket (only this
    OS user reaches it), else the connection string (the password from PGPASSWORD or
    asked by psql)."""
    if db.embedded is not None:
        return db.embedded.conninfo(role, db.settings.embedded.database)
    return connection_string(db, role)


def create(db: Database, request: AnalystIn, *, created_by: str = "cli") -> CreatedAnalyst:
    """A LOGIN role in the analyst group, read-only, with its statement timeout, granted
    the request's tenants; all or nothing. Postgres stores a SCRAM verifier computed
    here, so the password never travels in a statement."""
    app_role = db.settings.database.app_role
    role = role_name(app_role, request.name)
    password = secrets.token_urlsafe(PASSWORD_BYTES)
    with db.admin_connection() as conn:
        verifier = conn.pgconn.encrypt_password(
            password.encode(), role.encode(), b"scram-sha-256"
        ).decode()
        try:
            with conn.transaction():
                row = _create(conn, request, role, verifier, app_role, created_by)
        except psycopg.errors.DuplicateObject:
            raise Conflict(
                f"analyst {request.name!r} exists (role {role}): revoke it first, or pick "
                "another name"
            ) from None
        except psycopg.errors.UniqueViolation:
            raise Conflict(f"analyst {request.name!r} exists: revoke it first") from None
        except psycopg.errors.ForeignKeyViolation:
            raise NotFound(
                "every tenant must exist before an analyst is granted it: "
                f"{', '.join(request.tenants)} (a tenant exists once something was stored)"
            ) from None
        except psycopg.errors.InsufficientPrivilege as exc:
            raise Forbidden(
                "the database user Elephant migrates with cannot create roles (it needs "
                f"CREATEROLE): {exc.diag.message_primary}"
            ) from None
    info = _info(row)
    return CreatedAnalyst(
        name=info.name,
        role=info.role,
        tenants=info.tenants,
        statement_timeout_seconds=info.statement_timeout_seconds,
        created_by=info.created_by,
        created_at=info.created_at,
        limits=info.limits,
        password=password,
        connection=connection_string(db, role),
    )


def _create(
    conn: Connection,
    request: AnalystIn,
    role: str,
    verifier: str,
    app_role: str,
    created_by: str,
) -> tuple[Any, ...]:
    ident = sql.Identifier(role)
    conn.execute(
        sql.SQL(
            "CREATE ROLE {} LOGIN PASSWORD {} NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE "
            "NOREPLICATION INHERIT CONNECTION LIMIT {} IN ROLE {}"
        ).format(
            ident,
            sql.Literal(verifier),
            sql.Literal(CONNECTION_LIMIT),
            sql.Identifier(analyst_group(app_role)),
        )
    )
    for setting, value in role_settings(request.statement_timeout_seconds):
        _set(conn, ident, setting, value)
    # Superuser-only: a migrator that is not one leaves temp files to the server's limit.
    with contextlib.suppress(psycopg.errors.InsufficientPrivilege), conn.transaction():
        _set(conn, ident, "temp_file_limit", TEMP_FILE_LIMIT)
    conn.execute(
        "INSERT INTO analysts (role_name, name, statement_timeout_seconds, created_by, verifier) "
        "VALUES (%s, %s, %s, %s, %s)",
        (role, request.name, request.statement_timeout_seconds, created_by, verifier),
    )
    for tenant in request.tenants:
        conn.execute(
            "INSERT INTO analyst_grants (role_name, tenant_id) VALUES (%s, %s)", (role, tenant)
        )
        audit.write(
            conn,
            tenant=tenant,
            key_prefix=None if created_by == "cli" else created_by,
            action="analyst.create",
            target=request.name,
            detail={"role": role, "tenants": request.tenants},
        )
    analyst_fence.build(conn, role)  # its views, its graphs, its search_path
    record_settings(conn, role)  # last: every setting of its creation is in
    rows = conn.execute(load_sql("access/list_analysts.sql"), (None, None)).fetchall()
    return next(row for row in rows if row[0] == request.name)


def _set(conn: Connection, ident: sql.Identifier, setting: str, value: str) -> None:
    conn.execute(
        sql.SQL("ALTER ROLE {} SET {} = {}").format(
            ident, sql.Identifier(setting), sql.Literal(value)
        )
    )


def record_settings(conn: Connection, role: str) -> None:
    """Record the role's settings as they stand: the analyst guard puts them back when
    the analyst changes them (ALTER ROLE self SET ...)."""
    conn.execute(load_sql("access/record_analyst_settings.sql"), (role,))


def list_analysts(db: Database, *, tenant: str | None = None) -> list[AnalystInfo]:
    """Every analyst (tenant None), or those that read exactly that tenant."""
    with db.admin_connection() as conn:
        rows = conn.execute(load_sql("access/list_analysts.sql"), (tenant, tenant)).fetchall()
    return [_info(row) for row in rows]


def revoke(
    db: Database, name: str, *, tenant: str | None = None, revoked_by: str = "cli"
) -> AnalystInfo:
    """Drop the analyst's role (its open sessions are ended first, where the migrator
    may signal them) and its grants. ``tenant``: only an analyst of that tenant alone."""
    if not NAME_PATTERN.match(name):
        raise InvalidInput("an analyst name is 1-30 lower-case letters, digits or _")
    found = [a for a in list_analysts(db, tenant=tenant) if a.name == name]
    if not found:
        raise NotFound(f"no analyst named {name!r}" + (f" of tenant {tenant}" if tenant else ""))
    analyst = found[0]
    with db.admin_connection() as conn:
        _end_sessions(conn, analyst.role)
        _drop_elsewhere(db, conn, analyst.role)
        try:
            with conn.transaction():
                conn.execute("SET LOCAL lock_timeout = '10s'")
                analyst_fence.remove(conn, analyst.role)
                conn.execute("DELETE FROM analysts WHERE role_name = %s", (analyst.role,))
                _audit_revoke(conn, analyst, revoked_by)
                _drop_role(conn, analyst.role)  # last: it may lend the migrator the role
        except psycopg.errors.DependentObjectsStillExist as exc:
            raise Conflict(
                f"analyst {name!r} cannot be dropped yet: its role {analyst.role} still holds "
                f"something outside this database ({exc.diag.message_detail or exc}); drop "
                f"that there (DROP OWNED BY in that database), then revoke again"
            ) from None
        except psycopg.errors.LockNotAvailable:
            raise Conflict(
                f"analyst {name!r}: its objects are in use (waited 10 s): revoke again"
            ) from None
        except psycopg.errors.InsufficientPrivilege as exc:
            raise Forbidden(
                f"the database user Elephant migrates with may not drop role {analyst.role} "
                f"or what it owns: {exc.diag.message_primary}"
            ) from None
    return analyst


def _end_sessions(conn: Connection, role: str) -> None:
    """It can no longer log in, and its sessions end now (waiting up to 5 s each) where
    the migrator may signal them, else when they disconnect."""
    if not _role_exists(conn, role):
        return
    with contextlib.suppress(psycopg.errors.InsufficientPrivilege), conn.transaction():
        conn.execute(sql.SQL("ALTER ROLE {} NOLOGIN").format(sql.Identifier(role)))
    # Committed first: no new session of it starts while these end.
    with contextlib.suppress(psycopg.errors.InsufficientPrivilege), conn.transaction():
        lent = lend_membership(conn, role)
        conn.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE usename = %s",
            (role,),
        )
        if lent:
            conn.execute(sql.SQL("REVOKE {} FROM CURRENT_USER").format(sql.Identifier(role)))


def lend_membership(conn: Connection, role: str) -> bool:
    """A migrator that is not a superuser (CREATEROLE, with ADMIN on the roles it made)
    may neither signal an analyst's sessions nor drop what it owns: within the caller's
    transaction it becomes a member of the role (the caller revokes it, or drops the
    role). Returns whether it did. Run nothing else in that transaction: the analyst
    group's policies apply to its members."""
    row = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
    if row is None or row[0]:
        return False
    conn.execute(sql.SQL("GRANT {} TO CURRENT_USER").format(sql.Identifier(role)))
    return True


def _role_exists(conn: Connection, role: str) -> bool:
    return conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is not None


def _drop_role(conn: Connection, role: str) -> None:
    """Drop what the role owns here (large objects it made before migration 0018 took
    lo_create away, anything a migrator that is not a superuser could not take away) and
    its privileges, then the role: nothing of it is left."""
    if not _role_exists(conn, role):
        return  # dropped outside Elephant: only its rows were left
    ident = sql.Identifier(role)
    lend_membership(conn, role)  # DROP ROLE ends the membership
    conn.execute(sql.SQL("DROP OWNED BY {}").format(ident))
    conn.execute(sql.SQL("DROP ROLE {}").format(ident))


def _drop_elsewhere(db: Database, conn: Connection, role: str) -> None:
    """Drop what the role owns in the cluster's other databases (it may log in to any that
    lets PUBLIC connect, and make large objects there). A database the migrator may not
    enter is left: DROP ROLE then says what remains (a clear Conflict)."""
    for (database,) in conn.execute(
        load_sql("access/analyst_other_databases.sql"), (role,)
    ).fetchall():
        try:
            other = psycopg.connect(
                make_conninfo(db.admin_conninfo(), dbname=database), autocommit=True
            )
        except psycopg.OperationalError:
            continue
        with other, contextlib.suppress(psycopg.errors.InsufficientPrivilege), other.transaction():
            lent = lend_membership(other, role)
            other.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            if lent:
                other.execute(sql.SQL("REVOKE {} FROM CURRENT_USER").format(sql.Identifier(role)))


def _audit_revoke(conn: Connection, analyst: AnalystInfo, revoked_by: str) -> None:
    granted_tenants: list[str | None] = [*analyst.tenants] or [None]
    for granted in granted_tenants:
        audit.write(
            conn,
            tenant=granted,
            key_prefix=None if revoked_by == "cli" else revoked_by,
            action="analyst.revoke",
            target=analyst.name,
            detail={"role": analyst.role},
        )
