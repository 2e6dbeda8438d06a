"""The analyst guard: the limits an analyst's own session could lift, held by the server.

Postgres lets any session ``SET statement_timeout = 0`` (and work_mem,
idle_in_transaction_session_timeout, default_transaction_read_only) and lets a role
``ALTER ROLE`` itself (its settings, its password): no grant takes that away. So every
serving process (``elephant serve``, ``elephant mcp --http``) runs this guard, on a
migrator connection of its own, about once a second:

- cancels analyst statements running longer than the role's statement timeout;
- ends analyst sessions idle in a transaction longer than IDLE_IN_TRANSACTION_SECONDS;
- puts back role settings an analyst changed (as recorded at creation, analysts.role_settings)
  and drops any it set for one database;
- where the migrator may read pg_authid (a superuser), puts back a changed password;
- where the server runs on this machine (embedded), cancels an analyst statement whose
  backend holds more than MEMORY_LIMIT_MB of private memory: a session may raise
  work_mem for itself, and no other session can see it did, but its memory shows.

Several guards on one database (two processes) do the same idempotent work. A migrator
that is not a superuser needs pg_read_all_stats to see analyst sessions' states (else
the cancel and idle checks are skipped, logged once); it signals an analyst's backends
as a member of its role, lent for that one transaction (it made the role, so it holds
ADMIN on it); it cannot read pg_authid, so it skips the passwords (docs/security.md).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psutil
import psycopg
from psycopg import sql

from app.db.resources import load_sql
from app.services.access.analysts import IDLE_IN_TRANSACTION_SECONDS, lend_membership
from app.services.runtime import Elephant

log = logging.getLogger(__name__)

Connection = psycopg.Connection[tuple[Any, ...]]
INTERVAL_S = 1.0
MEMORY_LIMIT_MB = 1024  # private memory of one analyst backend (rss - shared)
RECONNECT_S = 5.0


@dataclass(slots=True)
class GuardReport:
    """What one pass did, by analyst name."""

    cancelled: list[str] = field(default_factory=list)
    ended: list[str] = field(default_factory=list)
    settings_restored: list[str] = field(default_factory=list)
    passwords_restored: list[str] = field(default_factory=list)


class AnalystGuard:
    """A daemon thread running :func:`guard_pass` every ``interval_s`` until stopped."""

    def __init__(
        self,
        conninfo: Callable[[], str],
        interval_s: float = INTERVAL_S,
        idle_seconds: int = IDLE_IN_TRANSACTION_SECONDS,
        memory_limit_mb: int | None = None,
    ) -> None:
        self._conninfo = conninfo
        self._interval_s = interval_s
        self._idle_seconds = idle_seconds
        self._memory_limit_mb = memory_limit_mb  # None: the server is not on this machine
        self._stop = threading.Event()
        self._skipped: set[str] = set()  # parts this migrator may not do, logged once
        self._thread = threading.Thread(target=self._loop, name="elephant-analyst-guard")
        self._thread.daemon = True

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 2.0) -> None:
        self._stop.set()
        self._thread.join(timeout_s)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                with psycopg.connect(
                    self._conninfo(), autocommit=True, application_name="elephant analyst guard"
                ) as conn:
                    conn.execute("SET statement_timeout = '5s'")
                    conn.execute("SET lock_timeout = '2s'")
                    while not self._stop.is_set():
                        guard_pass(
                            conn,
                            self._skipped,
                            idle_seconds=self._idle_seconds,
                            memory_limit_mb=self._memory_limit_mb,
                        )
                        self._stop.wait(self._interval_s)
            except psycopg.Error as exc:  # database restarting, or the schema not there yet
                log.warning("analyst guard: %s (again in %.0f s)", exc, RECONNECT_S)
                self._stop.wait(RECONNECT_S)


def guard_pass(
    conn: Connection,
    skipped: set[str] | None = None,
    *,
    idle_seconds: int = IDLE_IN_TRANSACTION_SECONDS,
    memory_limit_mb: int | None = None,
) -> GuardReport:
    """One pass of every check; a part the migrator may not do is skipped (and logged
    once per ``skipped`` set)."""
    skipped = set() if skipped is None else skipped
    report = GuardReport()
    if not _any_analyst(conn):
        return report  # one cheap query a second while nobody has analyst access
    parts: tuple[tuple[str, Callable[[], None]], ...] = (
        ("cancel", lambda: _cancel(conn, report)),
        ("idle", lambda: _end_idle(conn, report, idle_seconds)),
        ("memory", lambda: _cancel_memory_hogs(conn, report, memory_limit_mb)),
        ("settings", lambda: _restore_settings(conn, report)),
        ("password", lambda: _restore_passwords(conn, report)),
    )
    if "cancel" not in skipped and not _sees_sessions(conn):
        skipped.update({"cancel", "idle", "memory"})
        log.warning(
            "analyst guard: skips cancel and idle checks: the migrator cannot see other "
            "roles' session states (grant it pg_read_all_stats, docs/security.md)"
        )
    for part, check in parts:
        if part in skipped:
            continue
        try:
            check()
        except psycopg.errors.InsufficientPrivilege as exc:
            skipped.add(part)
            log.warning("analyst guard: skips %s checks: %s", part, exc.diag.message_primary)
        except psycopg.DatabaseError as exc:
            if conn.closed or conn.broken:
                raise  # the connection is gone: the loop reconnects
            # A role revoked meanwhile, a lock held, or the analyst's own ALTER ROLE racing
            # ours ("tuple concurrently updated"): the next pass, a second later, sees anew.
            log.info("analyst guard: %s check: %s", part, exc.diag.message_primary)
    return report


def _any_analyst(conn: Connection) -> bool:
    row = conn.execute("SELECT EXISTS (SELECT 1 FROM analysts)").fetchone()
    return row is not None and bool(row[0])


def _sees_sessions(conn: Connection) -> bool:
    """Whether pg_stat_activity shows this role other roles' states and query times."""
    row = conn.execute(
        "SELECT rolsuper OR pg_has_role(current_user, 'pg_read_all_stats', 'USAGE') "
        "FROM pg_roles WHERE rolname = current_user"
    ).fetchone()
    return row is not None and bool(row[0])


def _cancel(conn: Connection, report: GuardReport) -> None:
    for name, role, pid in conn.execute(load_sql("access/guard_cancel.sql")).fetchall():
        if _signal(conn, role, pid, "pg_cancel_backend"):
            report.cancelled.append(name)
            log.warning(
                "analyst guard: cancelled %s's statement past its limit (pid %s)", name, pid
            )


def _cancel_memory_hogs(conn: Connection, report: GuardReport, limit_mb: int | None) -> None:
    if limit_mb is None:
        return
    for name, role, pid in conn.execute(load_sql("access/guard_active.sql")).fetchall():
        try:
            memory = psutil.Process(pid).memory_info()
        except psutil.Error:
            continue  # ended meanwhile
        private_mb = (memory.rss - memory.shared) / 2**20
        if private_mb > limit_mb and _signal(conn, role, pid, "pg_cancel_backend"):
            report.cancelled.append(name)
            log.warning(
                "analyst guard: cancelled %s's statement holding %.0f MB (pid %s)",
                name,
                private_mb,
                pid,
            )


def _end_idle(conn: Connection, report: GuardReport, idle_seconds: int) -> None:
    rows = conn.execute(load_sql("access/guard_idle.sql"), {"idle_seconds": idle_seconds})
    for name, role, pid in rows.fetchall():
        if _signal(conn, role, pid, "pg_terminate_backend"):
            report.ended.append(name)
            log.warning(
                "analyst guard: ended %s's session idle in a transaction (pid %s)", name, pid
            )


def _signal(conn: Connection, role: str, pid: int, function: str) -> bool:
    """Cancel or end one of the analyst's backends; a migrator that is not a superuser
    is lent the role for that transaction alone (analysts.lend_membership)."""
    with conn.transaction():
        lent = lend_membership(conn, role)
        query = sql.SQL("SELECT {}(%s)").format(sql.Identifier(function))
        row = conn.execute(query, (pid,)).fetchone()
        signalled = row is not None and bool(row[0])
        if lent:
            conn.execute(sql.SQL("REVOKE {} FROM CURRENT_USER").format(sql.Identifier(role)))
    return signalled


def _restore_settings(conn: Connection, report: GuardReport) -> None:
    for name, role, recorded, databases in conn.execute(
        load_sql("access/guard_settings.sql")
    ).fetchall():
        ident = sql.Identifier(role)
        with conn.transaction():
            conn.execute(sql.SQL("ALTER ROLE {} RESET ALL").format(ident))
            for database in databases:
                conn.execute(
                    sql.SQL("ALTER ROLE {} IN DATABASE {} RESET ALL").format(
                        ident, sql.Identifier(database)
                    )
                )
            for item in recorded:
                _put_back(conn, ident, *item.split("=", 1))
            # As Postgres now spells them (a list may be spaced differently): the next
            # pass compares like with like.
            conn.execute(load_sql("access/record_analyst_settings.sql"), (role,))
        report.settings_restored.append(name)
        log.warning("analyst guard: put back the role settings %s changed", name)


def _put_back(conn: Connection, ident: sql.Identifier, setting: str, value: str) -> None:
    if "," not in value:
        conn.execute(
            sql.SQL("ALTER ROLE {} SET {} = {}").format(
                ident, sql.Identifier(setting), sql.Literal(value)
            )
        )
        return
    # A list (search_path) is stored in its own syntax, which a literal would make one
    # element: set it in this transaction, then store it as it now stands.
    conn.execute("SELECT set_config(%s, %s, true)", (setting, value))
    conn.execute(
        sql.SQL("ALTER ROLE {} SET {} FROM CURRENT").format(ident, sql.Identifier(setting))
    )


def _restore_passwords(conn: Connection, report: GuardReport) -> None:
    for name, role, verifier in conn.execute(load_sql("access/guard_passwords.sql")).fetchall():
        conn.execute(
            sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(role), sql.Literal(verifier))
        )
        report.passwords_restored.append(name)
        log.warning("analyst guard: put back the password %s changed", name)


def start_guard(elephant: Elephant) -> AnalystGuard:
    """Run the guard in a background thread of this serving process until ``elephant``
    closes."""
    local = elephant.db.embedded is not None
    guard = AnalystGuard(
        elephant.db.admin_conninfo, memory_limit_mb=MEMORY_LIMIT_MB if local else None
    )
    elephant.stop_on_close(guard)
    guard.start()
    return guard
