"""The entry points of a re-embed: ``start``, ``step``, ``run``, ``status`` and ``cancel``.

Each takes the migrator connection and, for work, the re-embed's advisory lock, then
hands the piece of work to app/services/ops/reembed/phases.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Literal

import psycopg
from psycopg import sql

from app.db.runtime import Connection
from app.errors import ConfigError, Conflict, ElephantError, InvalidInput
from app.services.ops.reembed.embedders import build, cache_target
from app.services.ops.reembed.phases import advance, setup, wait_for_settle
from app.services.ops.reembed.rows import TABLES
from app.services.ops.reembed.state import (
    BATCH,
    CHANNEL,
    SETTLE_S,
    Phase,
    ReembedStatus,
    Target,
    admin,
    ddl,
    drop_state,
    read_state,
    record_error,
    require_bypass,
    stepping,
    table_progress,
)
from app.services.runtime import Elephant

log = logging.getLogger(__name__)


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
    with admin(elephant) as conn:
        require_bypass(conn)
        current = status(elephant, conn=conn, count=False)
        if _check_not_running(current, chosen, dimensions):
            return status(elephant, conn=conn)
    embedder = build(base, chosen, dimensions)
    target = replace(chosen, dim=embedder.dim)
    if (target.model, target.dim) == (current.model, current.dim):
        raise InvalidInput(
            f"model: the vectors are {model} ({target.dim}-d) already; nothing to re-embed"
        )
    cache_target(target, embedder)
    with admin(elephant) as conn, stepping(conn):
        current = status(elephant, conn=conn, count=False)  # again, under the lock
        if _check_not_running(current, target, target.dim):
            return status(elephant, conn=conn)
        setup(elephant, conn, target, current)
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
    with admin(elephant) as conn:
        state = read_state(conn)
        if state is None:
            return status(elephant, conn=conn, count=False)
        with stepping(conn, wait=wait) as mine:
            if not mine:
                return status(elephant, conn=conn, count=False)
            state = read_state(conn)  # re-read under the lock: another step may have moved it
            if state is None:
                return status(elephant, conn=conn, count=False)
            try:
                phase = advance(elephant, conn, state, batch, settle_s)
            except (ElephantError, psycopg.Error) as exc:
                record_error(conn, exc)
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
            wait_for_settle(elephant, current.swapped_at, settle_s)


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
        with admin(elephant) as connection:
            return status(elephant, conn=connection, count=count, phase=phase)
    meta = conn.execute("SELECT embedding_model, embedding_dim FROM elephant_meta").fetchone()
    if meta is None:
        raise ConfigError("elephant_meta has no row: run `elephant migrate`")
    model, dim = str(meta[0]), int(meta[1])
    state = read_state(conn)
    if state is None:
        return ReembedStatus(phase=phase or "idle", model=model, dim=dim)
    tables = table_progress(conn) if count and state.phase != "finish" else []
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
    with admin(elephant) as conn, stepping(conn):
        state = read_state(conn)
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
        with ddl(conn):
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
            drop_state(conn)
            conn.execute("SELECT pg_notify(%s, 'cancelled')", (CHANNEL,))
        log.info("re-embed to %s cancelled", state.target.model)
        return status(elephant, conn=conn, count=False)
