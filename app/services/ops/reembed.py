"""Re-embed every vector to a new embedding model with no downtime.

The new vectors are built beside the old ones and swapped in at the end; search keeps
answering with the old model until the swap, and with the new one right after it.

Phases (one row in ``elephant_reembed``, sql/reembed_setup.sql, while a re-embed runs):

1. ``start``: the target model is built and probed (a bad name or dimension fails here,
   before any DDL); ``embedding_next vector(D)`` is added to memories, facts and passages
   (a catalog-only change), with a trigger that clears a row's new vector when its text
   or old vector changes afterwards.
2. ``backfill``: batches in id order (a keyset cursor per table, committed with each
   batch, so a crash or kill loses at most the batch in flight). A row changed while its
   batch was being embedded is skipped (its ``xmin`` moved) and left to the catch-up.
3. ``catchup``: rows still without a new vector: written during the backfill, or changed.
4. ``index``: every index on ``embedding`` (HNSW, same opclass, options and predicate) is
   built again on ``embedding_next`` with CREATE INDEX CONCURRENTLY (an interrupted build
   leaves an invalid index, dropped and rebuilt on resume).
5. ``swap``: once the rows left are fewer than a batch, one short transaction locks the
   three tables, embeds the last few rows, drops the old columns (their indexes go with
   them), renames the new ones and their indexes into place, copies the column comments,
   records the new model in ``elephant_meta`` and notifies every process (``NOTIFY
   elephant_embedding``) so those that follow the database switch models at once.
6. ``finish`` (after ``SETTLE_S``): rows written since the swap are embedded again, in
   case a process that had not switched yet wrote an old-model vector; passages get their
   NOT NULL back (through a validated CHECK, so no table scan under a lock); the trigger
   function and the state table are dropped.

The old vectors are dropped at the swap, not kept: a re-embed back to the old model is the
way back. Dropped columns keep their bytes in the rows until the rows are rewritten
(VACUUM FULL or pg_repack reclaims them at once).

Running processes learn of the swap through :class:`EmbeddingFollower` (``follow``), which
listens for the notification, preloads the target model while the backfill runs, and
switches when the database says so. A process started later reads embedding.model: set it
(and embedding.dim) to the new model after the swap; doctor says so until it is done.

The work reads every tenant's rows, so the migrator connection must bypass row-level
security (a superuser, as embedded, or a role with BYPASSRLS).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from pydantic import ValidationError

from app.config import EmbeddingSettings
from app.db.resources import load_sql
from app.db.runtime import Connection
from app.errors import ConfigError, Conflict, ElephantError, InvalidInput
from app.providers.embedder import Embedder, Vectors, build_embedder_for
from app.services.memory.windows import WindowTurn, render_turn
from app.services.runtime import Elephant

log = logging.getLogger(__name__)

Phase = Literal["idle", "backfill", "catchup", "index", "swap", "finish", "done"]
TABLES = ("memories", "facts", "passages")
CHANNEL = "elephant_embedding"
BATCH = 256
SETTLE_S = 10.0
"""Seconds between the swap and the finish: longer than any process needs to hear of the
swap and finish an embedding it had begun with the old model."""
LOCK_TIMEOUT = "5s"
"""How long a DDL statement waits for a table lock before giving up (and trying again
later) instead of queueing every search behind it."""
_ADVISORY_KEY = 0x454C455245454D42  # one re-embed step at a time, across processes
_NEXT = "_next"
_WORD = re.compile(r"\bembedding\b")

# Per table: the expression a row's "version" is read by (the text its vector is made
# from, or what picks that text), checked again when the new vector is written, and the
# columns that go with it to build the text. As the write paths build it: a memory embeds
# its text; an extracted fact its text, a graph observation 'name: text' or 'name (kind):
# text' (app/services/graph/operations.py); a passage its part of a turn under the
# turn's date and speaker, or its part of a long note (app/services/memory/passages.py).
_VERSION = {
    "memories": "m.text",
    "facts": "CASE WHEN f.observation_kind IS NULL THEN f.text "
    "WHEN f.observation_kind = 'note' THEN coalesce(f.subject, '') || ': ' || f.text "
    "ELSE coalesce(f.subject, '') || ' (' || f.observation_kind || '): ' || f.text END",
    "passages": "p.char_start || ':' || p.char_end",
}
_FROM = {
    "memories": "FROM memories AS m",
    "facts": "FROM facts AS f",
    "passages": "FROM passages AS p LEFT JOIN turns AS t ON t.id = p.turn_id "
    "LEFT JOIN memories AS n ON n.id = p.memory_id",
}
_EXTRA = {"passages": ", p.char_start, p.char_end, t.speaker, t.text, t.occurred_at, n.text"}
_ALIAS = {"memories": "m", "facts": "f", "passages": "p"}
_KEY_TYPE = {"memories": "uuid", "facts": "uuid", "passages": "bigint"}
_KEY_START = {
    "memories": "00000000-0000-0000-0000-000000000000",
    "facts": "00000000-0000-0000-0000-000000000000",
    "passages": "0",
}
# What the re-embedded text depends on: an UPDATE of any of these clears embedding_next.
_TRIGGER_COLUMNS = {
    "memories": ("embedding", "text"),
    "facts": ("embedding", "text", "subject", "observation_kind"),
    "passages": ("embedding", "char_start", "char_end", "turn_id", "memory_id"),
}


def _select(table: str, where: str) -> str:
    """id, version, then the text's parts, of the rows ``where`` picks."""
    alias = _ALIAS[table]
    return (
        f"SELECT {alias}.id::text, {_VERSION[table]}{_EXTRA.get(table, '')} "
        f"{_FROM[table]} WHERE {where}"
    )


_NOT_NULL_CHECK = "{table}_embedding_reembed_not_null"


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
    def from_json(cls, data: dict[str, Any]) -> Target:
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


# ------------------------------------------------------------------ public functions


def start(
    elephant: Elephant,
    model: str,
    dimensions: int | None = None,
    *,
    provider: Literal["local", "ollama"] | None = None,
    query_prefix: str | None = None,
    document_prefix: str | None = None,
) -> ReembedStatus:
    """Begin re-embedding to ``model`` (``dimensions`` None: the local model's own size).

    The target is built and probed first: an unknown model, a dimension it does not
    produce or one out of range is InvalidInput (422) before any DDL. A re-embed already
    in progress is a Conflict (409), unless it is to the same target (then its status).
    Settings the target does not name (device, token limit, batch size) are embedding.*'s;
    prefixes default to none for another model and to embedding.*'s for the same one.
    """
    base = elephant.settings.embedding
    if not model.strip():
        raise InvalidInput("model: give the embedding model to re-embed to")
    if dimensions is not None and not 1 <= dimensions <= 16000:
        raise InvalidInput(f"dimensions: {dimensions} is not within 1..16000")
    same_model = model == base.model
    chosen = Target(
        provider or base.provider,
        model,
        dimensions or 0,
        query_prefix if query_prefix is not None else (base.query_prefix if same_model else ""),
        document_prefix
        if document_prefix is not None
        else (base.document_prefix if same_model else ""),
    )
    with _admin(elephant) as conn:
        _require_bypass(conn)
        current = status(elephant, conn=conn, count=False)
        if _check_not_running(current, chosen, dimensions):
            return status(elephant, conn=conn)
    embedder = _build(base, chosen, dimensions)
    target = replace(chosen, dim=embedder.dim)
    if (target.model, target.dim) == (current.model, current.dim):
        raise InvalidInput(
            f"model: the vectors are {model} ({target.dim}-d) already; nothing to re-embed"
        )
    _cache_target(target, embedder)
    with _admin(elephant) as conn, _stepping(conn):
        current = status(elephant, conn=conn, count=False)  # again, under the lock
        if _check_not_running(current, target, target.dim):
            return status(elephant, conn=conn)
        _setup(elephant, conn, target, current)
        log.info("re-embed to %s (%s-d) started", model, target.dim)
        return status(elephant, conn=conn)


def _check_not_running(current: ReembedStatus, target: Target, dimensions: int | None) -> bool:
    """True: a re-embed to this target runs already; one to another target: Conflict."""
    if not current.active:
        return False
    assert current.target is not None
    running = current.target
    if (running.model, running.provider) == (target.model, target.provider) and (
        dimensions is None or dimensions == running.dim
    ):
        return True
    raise Conflict(
        f"a re-embed to {running.model} ({running.dim}-d) is in progress: let it finish "
        "(`elephant maintain reembed`) or cancel it (`elephant maintain reembed --cancel`) first"
    )


def step(
    elephant: Elephant, batch: int = BATCH, *, settle_s: float = SETTLE_S, wait: bool = False
) -> ReembedStatus:
    """Do the next piece of work: one batch of rows, one index build, the swap, or the
    finish; returns the status after it (phase idle: nothing to do, done: finished now).

    Safe to call from several processes at once (one does the work, the others return the
    status at once, or with ``wait`` wait for it and then do the next piece) and after any
    crash (every piece is a transaction or is detected and redone). The job queue calls
    this until the phase is idle or done.
    """
    if not 1 <= batch <= 10000:
        raise InvalidInput(f"batch: {batch} is not within 1..10000")
    with _admin(elephant) as conn:
        state = _state(conn)
        if state is None:
            return status(elephant, conn=conn, count=False)
        with _stepping(conn, wait=wait) as mine:
            if not mine:
                return status(elephant, conn=conn, count=False)
            state = _state(conn)  # re-read under the lock: another step may have moved it
            if state is None:
                return status(elephant, conn=conn, count=False)
            try:
                phase = _advance(elephant, conn, state, batch, settle_s)
            except (ElephantError, psycopg.Error) as exc:
                _record_error(conn, exc)
                raise
        if phase == "done":
            return status(elephant, conn=conn, count=False, phase="done")
        return status(elephant, conn=conn, count=False)


def run(
    elephant: Elephant,
    batch: int = BATCH,
    *,
    settle_s: float = SETTLE_S,
    progress: Callable[[ReembedStatus], None] | None = None,
) -> ReembedStatus:
    """Step until the re-embed in progress is finished (backfill, catch-up, indexes, swap,
    finish); ``progress`` gets the status after every step. Idle: returns at once."""
    while True:
        current = step(elephant, batch, settle_s=settle_s, wait=True)
        if progress is not None:
            progress(current)
        if not current.active:
            return current
        if current.phase == "finish" and current.swapped_at is not None:
            _wait_for_settle(elephant, current.swapped_at, settle_s)


def status(
    elephant: Elephant,
    *,
    conn: Connection | None = None,
    count: bool = True,
    phase: Phase | None = None,
) -> ReembedStatus:
    """The re-embed in progress, with per-table counts (``count``: one scan of each table);
    phase idle when there is none."""
    if conn is None:
        with _admin(elephant) as admin:
            return status(elephant, conn=admin, count=count, phase=phase)
    meta = conn.execute("SELECT embedding_model, embedding_dim FROM elephant_meta").fetchone()
    if meta is None:
        raise ConfigError("elephant_meta has no row: run `elephant migrate`")
    model, dim = str(meta[0]), int(meta[1])
    state = _state(conn)
    if state is None:
        return ReembedStatus(phase=phase or "idle", model=model, dim=dim)
    tables = _progress(conn) if count and state.phase != "finish" else []
    return ReembedStatus(
        phase=phase or state.phase,
        model=model,
        dim=dim,
        target=state.target,
        tables=tables,
        vectors_written=state.embedded,
        started_at=state.started_at,
        updated_at=state.updated_at,
        swapped_at=state.swapped_at,
        last_error=state.last_error,
    )


def cancel(elephant: Elephant) -> ReembedStatus:
    """Abandon the re-embed in progress before its swap: drop the new columns (and their
    indexes), the trigger and the state. After the swap it cannot be cancelled (Conflict):
    finish it, then re-embed back."""
    with _admin(elephant) as conn, _stepping(conn):
        state = _state(conn)
        if state is None:
            return status(elephant, conn=conn, count=False)
        if state.phase == "finish":
            raise Conflict(
                "the re-embed has swapped already: let it finish (`elephant maintain "
                "reembed`), then re-embed back to the old model if you want it"
            )
        for index in state.indexes:  # an interrupted CONCURRENTLY build holds no lock
            conn.execute(
                sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(
                    sql.Identifier(index["next"])
                )
            )
        with _ddl(conn):
            for table in TABLES:
                conn.execute(
                    sql.SQL("DROP TRIGGER IF EXISTS elephant_reembed_reset ON {}").format(
                        sql.Identifier(table)
                    )
                )
                conn.execute(
                    sql.SQL("ALTER TABLE {} DROP COLUMN IF EXISTS embedding_next").format(
                        sql.Identifier(table)
                    )
                )
            _drop_state(conn)
            conn.execute("SELECT pg_notify(%s, 'cancelled')", (CHANNEL,))
        log.info("re-embed to %s cancelled", state.target.model)
        return status(elephant, conn=conn, count=False)


# ------------------------------------------------------------------ the target model

_TARGETS: dict[Target, Embedder] = {}
_TARGETS_LOCK = threading.Lock()


def _build(base: EmbeddingSettings, target: Target, dim: int | None) -> Embedder:
    """The target embedder, probed: every way it cannot work is InvalidInput."""
    changes: dict[str, object] = {
        "provider": target.provider,
        "query_prefix": target.query_prefix,
        "document_prefix": target.document_prefix,
    }
    try:
        embedder = build_embedder_for(base, target.model, dim, **changes)
        probe = embedder.embed_documents(["re-embed probe"])
    except ValidationError as exc:
        raise InvalidInput.from_validation(exc) from None
    except (ConfigError, ElephantError) as exc:
        raise InvalidInput(f"model: {exc.message}") from None
    except OSError as exc:  # transformers cannot read the directory
        raise InvalidInput(f"model: {target.model!r} cannot be loaded: {exc}") from None
    if probe.shape != (1, embedder.dim) or (dim is not None and embedder.dim != dim):
        raise InvalidInput(
            f"dimensions: {target.model} produces {probe.shape[-1]}-d vectors, not {dim}"
        )
    return embedder


def _cache_target(target: Target, embedder: Embedder) -> None:
    with _TARGETS_LOCK:
        _TARGETS.clear()  # one target at a time: drop a cancelled one's model
        _TARGETS[target] = embedder


def target_embedder(elephant: Elephant, target: Target) -> Embedder:
    """The target model, built once per process (a follower's preloaded one if it has it)."""
    embedder = elephant.embedder
    if isinstance(embedder, EmbeddingFollower):
        preloaded = embedder.preloaded(target)
        if preloaded is not None:
            return preloaded
    with _TARGETS_LOCK:
        found = _TARGETS.get(target)
    if found is None:
        found = _build(elephant.settings.embedding, target, target.dim)
        _cache_target(target, found)
    return found


# ------------------------------------------------------------------ state


@dataclass(frozen=True, slots=True)
class _State:
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


def _state(conn: Connection) -> _State | None:
    exists = conn.execute("SELECT to_regclass('elephant_reembed') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return None
    row = conn.execute(
        "SELECT target, from_model, from_dim, phase, cursors, indexes, embedded, swap_xid, "
        "swapped_at, started_at, updated_at, last_error FROM elephant_reembed"
    ).fetchone()
    if row is None:
        return None
    return _State(Target.from_json(row[0]), *row[1:])


def _save(conn: Connection, **columns: object) -> None:
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


def _record_error(conn: Connection, exc: BaseException) -> None:
    message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}".strip()
    try:
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            conn.rollback()
        conn.execute(
            "UPDATE elephant_reembed SET last_error = %s, updated_at = now()", (message[:2000],)
        )
    except psycopg.Error:
        log.warning("re-embed: could not record the error %s", message)


def _drop_state(conn: Connection) -> None:
    conn.execute("DROP TABLE IF EXISTS elephant_reembed")
    conn.execute("DROP FUNCTION IF EXISTS elephant_reembed_reset()")


def _progress(conn: Connection) -> list[TableProgress]:
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
def _admin(elephant: Elephant) -> Iterator[Connection]:
    """The migrator connection (autocommit; each piece of work opens its transaction)."""
    with elephant.db.admin_connection() as conn:
        register_vector(conn)
        yield conn


@contextmanager
def _stepping(conn: Connection, *, wait: bool = True) -> Iterator[bool]:
    """Hold the re-embed's advisory lock on this session; ``wait`` False: yield False at
    once when another process holds it."""
    if wait:
        conn.execute("SELECT pg_advisory_lock(%s)", (_ADVISORY_KEY,))
        got = True
    else:
        row = conn.execute("SELECT pg_try_advisory_lock(%s)", (_ADVISORY_KEY,)).fetchone()
        got = bool(row and row[0])
    try:
        yield got
    finally:
        if got and not conn.closed:
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.rollback()
            conn.execute("SELECT pg_advisory_unlock(%s)", (_ADVISORY_KEY,))


@contextmanager
def _ddl(conn: Connection) -> Iterator[None]:
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


def _require_bypass(conn: Connection) -> None:
    row = conn.execute(
        "SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user"
    ).fetchone()
    if not row or not row[0]:
        raise ConfigError(
            "re-embedding reads every tenant's rows: the migrator (DATABASE_URL) user must be "
            "a superuser or have BYPASSRLS (ALTER ROLE ... BYPASSRLS)"
        )


# ------------------------------------------------------------------ setup


def _setup(elephant: Elephant, conn: Connection, target: Target, current: ReembedStatus) -> None:
    """State table, new columns, triggers: one transaction, every statement idempotent."""
    with _ddl(conn):
        conn.execute(load_sql("reembed_setup.sql"))
        conn.execute(
            sql.SQL("GRANT SELECT ON elephant_reembed TO {}").format(
                sql.Identifier(elephant.settings.database.app_role)
            )
        )
        indexes = []
        for table in TABLES:
            conn.execute(
                sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS embedding_next vector({})").format(
                    sql.Identifier(table), sql.Literal(target.dim)
                )
            )
            conn.execute(  # in the row, as embedding (migration 0014: exact scans)
                sql.SQL("ALTER TABLE {} ALTER COLUMN embedding_next SET STORAGE MAIN").format(
                    sql.Identifier(table)
                )
            )
            conn.execute(
                sql.SQL("DROP TRIGGER IF EXISTS elephant_reembed_reset ON {}").format(
                    sql.Identifier(table)
                )
            )
            conn.execute(
                sql.SQL(
                    "CREATE TRIGGER elephant_reembed_reset BEFORE UPDATE OF {} ON {} "
                    "FOR EACH ROW EXECUTE FUNCTION elephant_reembed_reset()"
                ).format(
                    sql.SQL(", ").join(map(sql.Identifier, _TRIGGER_COLUMNS[table])),
                    sql.Identifier(table),
                )
            )
            indexes.extend(_vector_indexes(conn, table))
        conn.execute(
            "INSERT INTO elephant_reembed (target, from_model, from_dim, phase, indexes) "
            "VALUES (%s, %s, %s, 'backfill', %s)",
            (target.to_json(), current.model, current.dim, json.dumps(indexes)),
        )
        conn.execute("SELECT pg_notify(%s, 'started')", (CHANNEL,))


def _vector_indexes(conn: Connection, table: str) -> list[dict[str, str]]:
    """Every index that reads ``embedding`` (as a column, in an expression or in a partial
    index's predicate), with the statement that builds its twin on ``embedding_next``."""
    rows = conn.execute(
        "SELECT i.relname, pg_get_indexdef(i.oid) FROM pg_index AS x "
        "JOIN pg_class AS i ON i.oid = x.indexrelid "
        "JOIN pg_attribute AS a ON a.attrelid = x.indrelid AND a.attname = 'embedding' "
        "WHERE x.indrelid = %s::regclass AND (a.attnum = ANY (x.indkey::int2[]) "
        "  OR coalesce(pg_get_expr(x.indexprs, x.indrelid), '') ~ '\\membedding\\M' "
        "  OR coalesce(pg_get_expr(x.indpred, x.indrelid), '') ~ '\\membedding\\M') "
        "ORDER BY i.relname",
        (table,),
    ).fetchall()
    found = []
    for name, definition in rows:
        match = re.match(r"CREATE (UNIQUE )?INDEX (\S+) ON (.*)$", definition, re.DOTALL)
        if match is None or len(name) + len(_NEXT) > 63:
            raise ConfigError(f"cannot rebuild index {name} for the new vectors: {definition}")
        twin = f"{name}{_NEXT}"
        statement = f"CREATE {match.group(1) or ''}INDEX CONCURRENTLY {twin} ON " + _WORD.sub(
            "embedding_next", match.group(3)
        )
        found.append({"table": table, "name": name, "next": twin, "create": statement})
    return found


# ------------------------------------------------------------------ the work


def _advance(
    elephant: Elephant, conn: Connection, state: _State, batch: int, settle_s: float
) -> Phase:
    """One piece of work of the current phase; returns the phase after it."""
    if state.phase == "backfill":
        return _backfill(elephant, conn, state, batch)
    if state.phase == "catchup":
        if _catch_up(elephant, conn, state, batch) < batch:  # the rest: in the swap phase
            with conn.transaction():
                _save(conn, phase="index")
            return "index"
        return "catchup"
    if state.phase == "index":
        if _build_next_index(conn, state):
            return "index"
        with conn.transaction():
            _save(conn, phase="swap")
        return "swap"
    if state.phase == "swap":
        if _catch_up(elephant, conn, state, batch) >= batch:
            return "swap"  # writes keep coming: catch up before taking the locks
        _swap(elephant, conn, state, batch)
        return "finish"
    if state.phase == "finish":
        if state.swapped_at is not None and _settling(conn, state.swapped_at, settle_s):
            return "finish"
        _finish(elephant, conn, state, batch)
        return "done"
    raise ConfigError(f"elephant_reembed is in an unknown phase {state.phase!r}")


def _backfill(elephant: Elephant, conn: Connection, state: _State, batch: int) -> Phase:
    """The next batch in id order; when every table is through, on to the catch-up."""
    embedder = target_embedder(elephant, state.target)
    cursors = dict(state.cursors)
    for table in TABLES:
        cursor = cursors.get(table, _KEY_START[table])
        if cursor is None:  # this table is through
            continue
        key = f"{_ALIAS[table]}.id"
        rows = conn.execute(
            _select(table, f"{key} > %s::{_KEY_TYPE[table]} ORDER BY {key} LIMIT %s"),
            (cursor, batch),
        ).fetchall()
        cursors[table] = rows[-1][0] if len(rows) == batch else None
        _write(conn, table, embedder, rows, also=lambda: _save(conn, cursors=cursors))
        if rows:
            return "backfill"
    with conn.transaction():
        _save(conn, phase="catchup")
    return "catchup"


def _missing(conn: Connection, table: str, batch: int) -> list[tuple[Any, ...]]:
    """Up to ``batch`` rows of ``table`` without a new vector."""
    return conn.execute(
        _select(table, f"{_ALIAS[table]}.embedding_next IS NULL LIMIT %s"), (batch,)
    ).fetchall()


def _catch_up(elephant: Elephant, conn: Connection, state: _State, batch: int) -> int:
    """Up to ``batch`` rows of each table still without a new vector; the most any table
    had (``batch``: more may be waiting)."""
    embedder = target_embedder(elephant, state.target)
    found = 0
    for table in TABLES:
        rows = _missing(conn, table, batch)
        found = max(found, len(rows))
        _write(conn, table, embedder, rows)
    return found


def _count(conn: Connection, written: int) -> None:
    if written:
        conn.execute("UPDATE elephant_reembed SET embedded = embedded + %s", (written,))


def _texts(table: str, rows: Sequence[tuple[Any, ...]]) -> list[str]:
    """The text to embed of each row from ``_select``."""
    if table != "passages":
        return [str(row[1]) for row in rows]
    texts = []
    for _, _, start, end, speaker, turn_text, when, note_text in rows:
        if turn_text is not None:
            prefix = render_turn(WindowTurn(0, str(speaker), "", when, None))
            texts.append(prefix + str(turn_text)[start:end])
        else:
            texts.append(str(note_text)[start:end])
    return texts


def _write(
    conn: Connection,
    table: str,
    embedder: Embedder,
    rows: Sequence[tuple[Any, ...]],
    *,
    column: str = "embedding_next",
    check_version: bool = True,
    also: Callable[[], None] | None = None,
) -> int:
    """Embed ``rows`` (from ``_select``) with the target, then store the vectors in one
    transaction (the embedding runs outside it). With ``check_version`` a row whose text
    changed since it was read is left alone: the writer's UPDATE cleared its new vector
    (the trigger) and the catch-up takes it. ``also`` runs in the same transaction.
    Returns the rows written."""
    vectors: Vectors = embedder.embed_documents(_texts(table, rows))
    alias = _ALIAS[table]
    version = f" AND ({_VERSION[table]}) = %s" if check_version else ""
    statement = (
        f"UPDATE {table} AS {alias} SET {column} = %s "
        f"WHERE {alias}.id = %s::{_KEY_TYPE[table]}{version}"
    )
    with conn.transaction(), conn.cursor() as cursor:
        cursor.executemany(
            statement,
            [
                (vector, row[0], row[1]) if check_version else (vector, row[0])
                for row, vector in zip(rows, vectors, strict=True)
            ],
        )
        written = max(cursor.rowcount, 0)
        _count(conn, written)
        if also is not None:
            also()
    return written


def _build_next_index(conn: Connection, state: _State) -> bool:
    """Build one missing twin index (CONCURRENTLY: reads and writes go on); False when all
    are built. An invalid one (an interrupted build) is dropped and built again."""
    for index in state.indexes:
        row = conn.execute(
            "SELECT x.indisvalid FROM pg_index AS x JOIN pg_class AS i ON i.oid = x.indexrelid "
            "WHERE i.relname = %s AND i.relnamespace = 'public'::regnamespace",
            (index["next"],),
        ).fetchone()
        if row is not None and row[0]:
            continue
        twin = sql.Identifier(index["next"])
        if row is not None:
            conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(twin))
        log.info("re-embed: building %s", index["next"])
        conn.execute(index["create"].encode())
        return True
    return False


def _swap(elephant: Elephant, conn: Connection, state: _State, batch: int) -> None:
    """The one short transaction: last rows, columns and indexes into place, the new model
    recorded, every follower told (the NOTIFY is delivered at commit)."""
    embedder = target_embedder(elephant, state.target)
    with _ddl(conn):
        conn.execute(
            "LOCK TABLE memories, facts, passages IN ACCESS EXCLUSIVE MODE"
        )  # writers wait from here to the commit; the rest is quick
        # everything written before the lock, and not yet caught up
        for table in TABLES:
            while rows := _missing(conn, table, batch):
                _write(conn, table, embedder, rows, check_version=False)
        marker = conn.execute(
            "SELECT pg_snapshot_xmin(pg_current_snapshot())::text, now()"
        ).fetchone()
        assert marker is not None
        for table in TABLES:
            ident = sql.Identifier(table)
            comment = conn.execute(
                "SELECT col_description(%s::regclass, attnum) FROM pg_attribute "
                "WHERE attrelid = %s::regclass AND attname = 'embedding'",
                (table, table),
            ).fetchone()
            conn.execute(
                sql.SQL("DROP TRIGGER IF EXISTS elephant_reembed_reset ON {}").format(ident)
            )
            conn.execute(sql.SQL("ALTER TABLE {} DROP COLUMN embedding").format(ident))
            conn.execute(
                sql.SQL("ALTER TABLE {} RENAME COLUMN embedding_next TO embedding").format(ident)
            )
            if comment and comment[0]:
                conn.execute(
                    sql.SQL("COMMENT ON COLUMN {}.embedding IS {}").format(
                        ident, sql.Literal(comment[0])
                    )
                )
            if table == "passages":  # NOT NULL again, without a scan under this lock
                conn.execute(
                    sql.SQL(
                        "ALTER TABLE {} ADD CONSTRAINT {} CHECK (embedding IS NOT NULL) NOT VALID"
                    ).format(ident, sql.Identifier(_NOT_NULL_CHECK.format(table=table)))
                )
        for index in state.indexes:
            conn.execute(
                sql.SQL("ALTER INDEX {} RENAME TO {}").format(
                    sql.Identifier(index["next"]), sql.Identifier(index["name"])
                )
            )
        conn.execute(
            "UPDATE elephant_meta SET embedding_model = %s, embedding_dim = %s, updated_at = now()",
            (state.target.model, state.target.dim),
        )
        _save(conn, phase="finish", swap_xid=str(marker[0]), swapped_at=marker[1])
        conn.execute("SELECT pg_notify(%s, 'swapped')", (CHANNEL,))
    log.info("re-embed: swapped to %s (%s-d)", state.target.model, state.target.dim)
    follower = elephant.embedder
    if isinstance(follower, EmbeddingFollower):
        follower.adopt(embedder)


def _settling(conn: Connection, swapped_at: datetime, settle_s: float) -> bool:
    row = conn.execute(
        "SELECT now() < %s + make_interval(secs => %s)", (swapped_at, settle_s)
    ).fetchone()
    return bool(row and row[0])


def _wait_for_settle(elephant: Elephant, swapped_at: datetime, settle_s: float) -> None:
    with _admin(elephant) as conn:
        row = conn.execute(
            "SELECT extract(epoch FROM %s + make_interval(secs => %s) - now())",
            (swapped_at, settle_s),
        ).fetchone()
    left = float(row[0]) if row and row[0] is not None else 0.0
    if left > 0:
        time.sleep(min(left, settle_s))


def _finish(elephant: Elephant, conn: Connection, state: _State, batch: int) -> None:
    """Rows written since the swap (by any process) embedded again with the new model,
    passages' NOT NULL restored, the trigger function and the state dropped."""
    embedder = target_embedder(elephant, state.target)
    # xid of the oldest transaction running at the swap, as a 32-bit xid: every row
    # written after the swap has an xmin at or after it (age() compares wrap-safely)
    xid = str(int(state.swap_xid or "0") % 2**32)
    for table in TABLES:
        alias = _ALIAS[table]
        ids = [
            str(row[0])
            for row in conn.execute(
                f"SELECT {alias}.id::text FROM {table} AS {alias} "
                f"WHERE age({alias}.xmin) <= age(%s::xid)",
                (xid,),
            ).fetchall()
        ]
        for first in range(0, len(ids), batch):
            rows = conn.execute(
                _select(table, f"{alias}.id = ANY (%s::{_KEY_TYPE[table]}[])"),
                (ids[first : first + batch],),
            ).fetchall()
            _write(conn, table, embedder, rows, column="embedding", check_version=False)
        if ids:
            log.info("re-embed: %s %s written around the swap embedded again", len(ids), table)
    check = sql.Identifier(_NOT_NULL_CHECK.format(table="passages"))
    exists = conn.execute(
        "SELECT 1 FROM pg_constraint WHERE conname = %s AND conrelid = 'passages'::regclass",
        (_NOT_NULL_CHECK.format(table="passages"),),
    ).fetchone()
    if exists:
        conn.execute(sql.SQL("ALTER TABLE passages VALIDATE CONSTRAINT {}").format(check))
    with _ddl(conn):
        conn.execute("ALTER TABLE passages ALTER COLUMN embedding SET NOT NULL")
        conn.execute(sql.SQL("ALTER TABLE passages DROP CONSTRAINT IF EXISTS {}").format(check))
        _drop_state(conn)
        conn.execute("SELECT pg_notify(%s, 'done')", (CHANNEL,))
    log.info("re-embed to %s (%s-d) finished", state.target.model, state.target.dim)


# ------------------------------------------------------------------ following the database


class EmbeddingFollower:
    """An Embedder that embeds with the model the database's vectors are from.

    It wraps the configured embedder; a background thread listens on the
    ``elephant_embedding`` channel (and looks every ``poll_s`` in case a notification was
    lost while it reconnected): while a re-embed runs it preloads the target model, and
    when the swap commits it switches to it, so searches use the old model until the swap
    and the new one after it. ``stop`` ends the thread (the runtime calls it on close).
    """

    def __init__(self, elephant: Elephant, current: Embedder, *, poll_s: float = 30.0) -> None:
        self._elephant = elephant
        self._active = current
        self.model_name = current.model_name
        self.dim = current.dim
        self._preloaded: tuple[Target, Embedder] | None = None
        self._poll_s = poll_s
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._listen, name="elephant-embedding-follower", daemon=True
        )

    def __getattr__(self, name: str) -> Any:
        """What else the embedder offers (``warm_up``, ``loaded``...) is the active one's."""
        if name == "_active":
            raise AttributeError(name)
        return getattr(self._active, name)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._active.embed_documents(texts)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._active.embed_queries(texts)

    @property
    def active(self) -> Embedder:
        """The embedder in use now."""
        return self._active

    def preloaded(self, target: Target) -> Embedder | None:
        found = self._preloaded
        return found[1] if found is not None and found[0] == target else None

    def adopt(self, embedder: Embedder) -> None:
        """Embed with ``embedder`` from now on (the swap committed)."""
        with self._lock:
            if self._active is not embedder:
                log.info("embedding with %s (%s-d) from now on", embedder.model_name, embedder.dim)
            self._active = embedder
            self.model_name, self.dim = embedder.model_name, embedder.dim
            self._preloaded = None

    def start(self) -> None:
        """Check the database's model now (a process started after a swap, with the old
        model configured, must not embed with it); preloading happens in the thread."""
        with self._elephant.db.connection() as conn:
            self.sync(conn, preload=False)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2.0)

    def sync(self, conn: Connection, *, preload: bool = True) -> None:
        """Read the database's model and the re-embed in progress; switch or preload."""
        meta = conn.execute("SELECT embedding_model, embedding_dim FROM elephant_meta").fetchone()
        if meta is None:
            return
        model, dim = str(meta[0]), int(meta[1])
        state = _state(conn)
        if (model, dim) != (self._active.model_name, self._active.dim):
            if state is not None and (state.target.model, state.target.dim) == (model, dim):
                self.adopt(
                    self.preloaded(state.target) or target_embedder(self._elephant, state.target)
                )
            else:
                log.warning(
                    "the vectors are %s (%s-d) but embedding.model is %s (%s-d): embedding "
                    "with %s; set embedding.model and embedding.dim to it",
                    model, dim, self._active.model_name, self._active.dim, model,
                )  # fmt: skip
                self.adopt(build_embedder_for(self._elephant.settings.embedding, model, dim))
        elif state is not None and state.phase != "finish":
            if preload and self.preloaded(state.target) is None:
                embedder = target_embedder(self._elephant, state.target)
                with self._lock:
                    self._preloaded = (state.target, embedder)
        elif state is None:
            self._preloaded = None

    def _listen(self) -> None:
        """LISTEN on a connection of its own (a session: never through a transaction
        pooler); sync at each notification and every poll_s."""
        while not self._stop.is_set():
            try:
                conninfo = self._elephant.db.session_conninfo()
                with psycopg.connect(conninfo, autocommit=True) as conn:
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(CHANNEL)))
                    last = 0.0
                    while not self._stop.is_set():
                        if time.monotonic() - last >= self._poll_s:
                            self.sync(conn)
                            last = time.monotonic()
                        for _ in conn.notifies(timeout=0.5, stop_after=1):
                            last = 0.0  # something changed: sync now
            except (ElephantError, psycopg.Error) as exc:
                log.warning("embedding follower: %s", getattr(exc, "message", exc))
                self._stop.wait(min(self._poll_s, 5.0))


def follow(elephant: Elephant, *, poll_s: float = 30.0) -> EmbeddingFollower:
    """Make ``elephant`` embed with whatever model the database's vectors are from, now and
    after a re-embed swaps models while it runs (see EmbeddingFollower)."""
    current = elephant.embedder
    if isinstance(current, EmbeddingFollower):
        return current
    follower = EmbeddingFollower(elephant, current, poll_s=poll_s)
    follower.start()
    elephant.embedder = follower
    elephant.stop_on_close(follower)
    return follower
