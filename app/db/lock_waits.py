"""Bounded lock waits: no session outside the app (an analyst, a psql left open) can
stall a request or a start by holding a lock the app needs.

Every app and worker connection carries ``lock_timeout`` (database.lock_timeout_ms):
a statement that waits longer for a table, row or advisory lock fails with
LockNotAvailable, which the doors answer as 503 with Retry-After (``busy``) and
whose transaction rolls back whole. The migrator's own transactions set it locally
(``bound``). An advisory lock the app must take to run alone (the migration's) is
tried until a deadline (``take_advisory``), and the error names the sessions that
hold it (pid, user, application_name) and how to end them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import psycopg

from app.db.resources import load_sql
from app.errors import DatabaseUnavailable

RETRY_AFTER_S = 2  # a lock held past the bound: try again after this many seconds
_POLL_S = 0.2  # between two tries of an advisory lock


@dataclass(frozen=True, slots=True)
class Holder:
    """A session holding a lock the app waited for."""

    pid: int
    user: str | None
    application: str | None
    state: str | None
    seconds: int | None

    def describe(self) -> str:
        app = f", application {self.application!r}" if self.application else ""
        state = f", {self.state}" if self.state else ""
        since = f" for {self.seconds} s" if self.seconds is not None else ""
        return f"pid {self.pid} (user {self.user or '?'}{app}{state}{since})"


def bound(conn: psycopg.Connection[Any], timeout_ms: int) -> None:
    """This transaction's lock waits last at most ``timeout_ms`` (SET LOCAL)."""
    conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{int(timeout_ms)}ms",))


def busy(what: str, timeout_ms: int) -> DatabaseUnavailable:
    """The 503 of a request whose lock stayed held by another session past the bound."""
    return DatabaseUnavailable(
        f"{what}: a lock it needs stayed held by another database session for "
        f"{timeout_ms} ms (database.lock_timeout_ms); nothing was written, retry shortly",
        retry_after_s=RETRY_AFTER_S,
    )


def _holders(conn: psycopg.Connection[Any], statement: str, params: dict[str, int]) -> list[Holder]:
    try:
        rows = conn.execute(load_sql(statement), params).fetchall()
    except psycopg.Error:  # naming the holder is a courtesy: never hide the real error
        return []
    return [Holder(int(r[0]), r[1], r[2], r[3], r[4]) for r in rows]


def advisory_holders(conn: psycopg.Connection[Any], key: int) -> list[Holder]:
    """Sessions (other than this one) holding the advisory lock ``key``."""
    return _holders(conn, "db/advisory_holders.sql", {"key": key})


def relation_holders(conn: psycopg.Connection[Any]) -> list[Holder]:
    """Sessions (other than this one) holding a lock on a relation of this database."""
    return _holders(conn, "db/relation_lock_holders.sql", {})


def advice(holders: list[Holder]) -> str:
    """Who holds it and what to do, for an error message."""
    if not holders:
        return "no session holds it any more: try again"
    named = "; ".join(holder.describe() for holder in holders)
    pids = ", ".join(str(holder.pid) for holder in holders)
    return (
        f"held by {named}. Wait for it to finish, or end it with pg_terminate_backend "
        f"(pid {pids}; as a superuser or its own user)"
    )


def take_advisory(conn: psycopg.Connection[Any], key: int, wait_s: float, what: str) -> None:
    """Take the transaction-level advisory lock ``key``, trying until ``wait_s`` has
    passed; then fail (DatabaseUnavailable) naming who holds it."""
    deadline = time.monotonic() + wait_s
    while True:
        row = conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (key,)).fetchone()
        if row is not None and row[0]:
            return
        if time.monotonic() >= deadline:
            raise DatabaseUnavailable(
                f"{what} waited {wait_s:g} s for its advisory lock ({key}), "
                + advice(advisory_holders(conn, key)),
                retry_after_s=RETRY_AFTER_S,
            )
        time.sleep(_POLL_S)
