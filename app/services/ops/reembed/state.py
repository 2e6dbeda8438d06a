"""The state of a re-embed: its row in ``elephant_reembed`` (sql/reembed/setup.sql), the
status it is reported as, and the connections and locks every piece of work runs under.

The phases, the constants they share (batch size, settle time, lock timeout, the
notification channel), and the results the public functions return live here so every
other module of the package can read them without importing each other.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from app.db import lock_waits
from app.db.resources import load_sql
from app.db.runtime import Connection
from app.errors import ConfigError, Conflict
from app.protocol import JSONObject
from app.services.ops.reembed.rows import TABLES
from app.services.runtime import Elephant

log = logging.getLogger(__name__)

Phase = Literal["idle", "backfill", "catchup", "index", "swap", "finish", "done"]
CHANNEL = "elephant_embedding"
BATCH = 256
SETTLE_S = 10.0
"""Seconds between the swap and the finish: longer than any process needs to hear of the
swap and finish an embedding it had begun with the old model."""
LOCK_TIMEOUT = "5s"
"""How long a DDL statement waits for a table lock before giving up (and trying again
later) instead of queueing every search behind it."""
STEP_WAIT_S = 300.0  # longest wait of an operator's re-embed command for a step elsewhere
_ADVISORY_KEY = 0x454C455245454D42  # one re-embed step at a time, across processes


# ------------------------------------------------------------------ results


@dataclass(frozen=True, slots=True)
class Target:
    """The model being moved to, as the state row records it (enough to build it again)."""

    provider: str
    model: str
    dim: int
    query_prefix: str
    document_prefix: str

    def to_json(self) -> str:
        return json.dumps(
            {
                "provider": self.provider,
                "model": self.model,
                "dim": self.dim,
                "query_prefix": self.query_prefix,
                "document_prefix": self.document_prefix,
            }
        )

    @classmethod
    def from_json(cls, data: JSONObject) -> Target:
        return cls(
            str(data["provider"]),
            str(data["model"]),
            int(data["dim"]),
            str(data.get("query_prefix", "")),
            str(data.get("document_prefix", "")),
        )


@dataclass(frozen=True, slots=True)
class TableProgress:
    table: str
    rows: int
    embedded: int  # rows that hold a vector of the target model


@dataclass(frozen=True, slots=True)
class ReembedStatus:
    """Where the re-embed stands. ``phase`` idle: none in progress (``model``/``dim`` are
    the database's current ones); done: the call that returned it finished one."""

    phase: Phase
    model: str
    dim: int
    target: Target | None = None
    tables: list[TableProgress] = field(default_factory=list)
    vectors_written: int = 0
    started_at: datetime | None = None
    updated_at: datetime | None = None
    swapped_at: datetime | None = None
    last_error: str | None = None

    @property
    def active(self) -> bool:
        return self.phase not in ("idle", "done")

    @property
    def rows(self) -> int:
        return sum(table.rows for table in self.tables)

    @property
    def embedded(self) -> int:
        return sum(table.embedded for table in self.tables)

    def describe(self) -> str:
        """One line for doctor and the CLI."""
        if not self.active:
            what = "finished: " if self.phase == "done" else "none in progress; "
            return f"{what}vectors are {self.model} ({self.dim}-d)"
        assert self.target is not None
        line = (
            f"{self.model} ({self.dim}-d) -> {self.target.model} ({self.target.dim}-d): "
            f"{self.phase}"
        )
        if self.tables:
            share = 100.0 * self.embedded / self.rows if self.rows else 100.0
            parts = ", ".join(f"{t.table} {t.embedded}/{t.rows}" for t in self.tables)
            line += f", {self.embedded}/{self.rows} rows ({share:.1f}%: {parts})"
        if self.last_error:
            line += f"; last error: {self.last_error}"
        return line


# ------------------------------------------------------------------ state


@dataclass(frozen=True, slots=True)
class State:
    target: Target
    from_model: str
    from_dim: int
    phase: Phase
    cursors: dict[str, str | None]
    indexes: list[dict[str, str]]
    embedded: int
    swap_xid: str | None
    swapped_at: datetime | None
    started_at: datetime
    updated_at: datetime
    last_error: str | None


def read_state(conn: Connection) -> State | None:
    """The re-embed in progress (sql/reembed/state.sql), None when there is none."""
    exists = conn.execute("SELECT to_regclass('elephant_reembed') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return None
    row = conn.execute(load_sql("reembed/state.sql")).fetchone()
    if row is None:
        return None
    return State(Target.from_json(row[0]), *row[1:])


def save(conn: Connection, **columns: object) -> None:
    assignments = sql.SQL(", ").join(
        sql.SQL("{} = {}").format(sql.Identifier(name), sql.Placeholder(name)) for name in columns
    )
    values = {
        name: json.dumps(value) if isinstance(value, dict | list) else value
        for name, value in columns.items()
    }
    conn.execute(
        sql.SQL("UPDATE elephant_reembed SET {}, updated_at = now(), last_error = NULL").format(
            assignments
        ),
        values,
    )


def record_error(conn: Connection, exc: BaseException) -> None:
    message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}".strip()
    try:
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            conn.rollback()
        conn.execute(
            "UPDATE elephant_reembed SET last_error = %s, updated_at = now()", (message[:2000],)
        )
    except psycopg.Error:
        log.warning("re-embed: could not record the error %s", message)


def drop_state(conn: Connection) -> None:
    conn.execute("DROP TABLE IF EXISTS elephant_reembed")
    conn.execute("DROP FUNCTION IF EXISTS elephant_reembed_reset()")


def table_progress(conn: Connection) -> list[TableProgress]:
    found = []
    for table in TABLES:
        row = conn.execute(
            sql.SQL("SELECT count(*), count(embedding_next) FROM {}").format(sql.Identifier(table))
        ).fetchone()
        assert row is not None
        found.append(TableProgress(table, int(row[0]), int(row[1])))
    return found


# ------------------------------------------------------------------ connections and locks


@contextmanager
def admin(elephant: Elephant) -> Iterator[Connection]:
    """The migrator connection (autocommit; each piece of work opens its transaction)."""
    with elephant.db.admin_connection() as conn:
        register_vector(conn)
        yield conn


@contextmanager
def stepping(conn: Connection, *, wait: bool = True) -> Iterator[bool]:
    """Hold the re-embed's advisory lock on this session; ``wait`` False: yield False at
    once when another process holds it. ``wait`` True tries for STEP_WAIT_S (another
    step ends within it; an outside session holding the key may never let go), then
    raises Conflict naming who holds it."""
    deadline = time.monotonic() + (STEP_WAIT_S if wait else 0.0)
    while True:
        row = conn.execute("SELECT pg_try_advisory_lock(%s)", (_ADVISORY_KEY,)).fetchone()
        got = bool(row and row[0])
        if got or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    if wait and not got:
        raise Conflict(
            f"the re-embed waited {STEP_WAIT_S:g} s for its advisory lock, "
            + lock_waits.advice(lock_waits.advisory_holders(conn, _ADVISORY_KEY))
        )
    try:
        yield got
    finally:
        if got and not conn.closed:
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.rollback()
            conn.execute("SELECT pg_advisory_unlock(%s)", (_ADVISORY_KEY,))


@contextmanager
def ddl(conn: Connection) -> Iterator[None]:
    """A transaction whose table locks wait at most LOCK_TIMEOUT: a busy table is a Conflict
    to retry, not a queue of searches stuck behind an ALTER TABLE."""
    try:
        with conn.transaction():
            conn.execute("SELECT set_config('lock_timeout', %s, true)", (LOCK_TIMEOUT,))
            yield
    except psycopg.errors.LockNotAvailable:
        raise Conflict(
            f"a table stayed locked by other transactions for {LOCK_TIMEOUT}: retry (a long "
            "transaction may hold it)"
        ) from None


def require_bypass(conn: Connection) -> None:
    row = conn.execute(
        "SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user"
    ).fetchone()
    if not row or not row[0]:
        raise ConfigError(
            "re-embedding reads every tenant's rows: the migrator (DATABASE_URL) user must be "
            "a superuser or have BYPASSRLS (ALTER ROLE ... BYPASSRLS)"
        )
