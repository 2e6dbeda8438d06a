"""Writes a read causes (access statistics, LLM usage of a search), made off the request
path and in batches.

A search never writes what search indexes: it tells the recorder which memories and
facts it returned, the recorder adds them up in memory, and a background thread writes
each tenant's uses as one upsert into the narrow table ``access_stats`` every
``lifecycle.access_flush_seconds`` (sooner when many items wait), and at shutdown. A
search may run on a read-only replica, so the batch goes to the primary. A process
killed with SIGKILL loses at most one interval of statistics, never a memory.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import psycopg

from app.db import Database
from app.db.resources import load_sql
from app.db.runtime import TENANT_SETTING, Connection
from app.errors import ElephantError
from app.providers.llm import LLMUsage
from app.services.ops.usage import record_usage

log = logging.getLogger(__name__)

ItemKind = Literal["memory", "fact"]
# Items waiting before a batch is written early (and the cap kept after failed writes).
EARLY_FLUSH_ITEMS = 20_000
MAX_PENDING_ITEMS = 200_000


@dataclass(slots=True)
class _Uses:
    kind: ItemKind
    count: int
    last_at: datetime


# tenant -> item id -> its uses since the last batch
_Pending = dict[str, dict[str, _Uses]]


class AccessRecorder:
    """Adds uses up in memory; one background thread writes them, a tenant per statement."""

    def __init__(self, db: Database, flush_seconds: float = 5.0) -> None:
        self._db = db
        self._interval = flush_seconds
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()  # one batch written at a time, in order
        self._pending: _Pending = {}
        self._items = 0
        self._writes: list[tuple[str, str, Callable[[Connection], None]]] = []
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.batches_written = 0

    def record(self, tenant: str, memory_ids: list[str], fact_ids: list[str]) -> None:
        """Count one use of each id; returns at once."""
        if not memory_ids and not fact_ids:
            return
        now = datetime.now(UTC)
        used: tuple[tuple[ItemKind, list[str]], ...] = (("memory", memory_ids), ("fact", fact_ids))
        with self._lock:
            uses = self._pending.setdefault(tenant, {})
            for kind, ids in used:
                for item in ids:
                    self._items += _add(uses, item, _Uses(kind, 1, now))
            early = self._items >= EARLY_FLUSH_ITEMS
        self._ensure_thread()
        if early:
            self._wake.set()

    def usage(
        self,
        tenant: str,
        operation: str,
        usage: LLMUsage | None,
        *,
        ok: bool,
        error: str | None = None,
    ) -> None:
        """An LLM call made while reading (query paraphrases), recorded on the primary."""
        if usage is None:
            return
        with self._lock:
            self._writes.append(
                (
                    tenant,
                    "LLM usage",
                    lambda conn: record_usage(conn, tenant, operation, usage, ok=ok, error=error),
                )
            )
        self._ensure_thread()

    @property
    def pending_items(self) -> int:
        with self._lock:
            return self._items

    def flush(self, timeout_s: float = 10.0) -> None:
        """Write what is waiting now (tests, shutdown, benchmarks); ``timeout_s`` bounds the
        wait for a batch already being written."""
        if not self._write_lock.acquire(timeout=timeout_s):
            raise TimeoutError(f"access statistics: a batch took over {timeout_s} s")
        try:
            self._write_pending()
        finally:
            self._write_lock.release()

    def close(self) -> None:
        """Stop the thread and write the last batch."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.flush(timeout_s=30)

    # ------------------------------------------------------------------ the writer

    def _ensure_thread(self) -> None:
        if self._thread is not None or self._stop.is_set():
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="elephant-access", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self._interval)
            self._wake.clear()
            if self._stop.is_set():
                return
            with self._write_lock:
                self._write_pending()

    def _write_pending(self) -> None:
        with self._lock:
            pending, self._pending, self._items = self._pending, {}, 0
            writes, self._writes = self._writes, []
        if not self._db.is_open:  # closed under a runtime nobody closed: nowhere to write
            if pending or writes:
                log.debug("access statistics dropped: the database was closed")
            self._stop.set()
            return
        for tenant, uses in pending.items():
            if not self._upsert(tenant, uses):
                self._keep(tenant, uses)
        for tenant, what, write in writes:
            try:
                with self._db.tenant(tenant, create=False) as conn:  # erased: stays erased
                    write(conn)
            except (ElephantError, psycopg.Error) as exc:  # bookkeeping: never fail a search
                log.warning("%s not recorded: %s", what, exc)
        if pending:
            self.batches_written += 1

    def forget(self, tenant: str) -> None:
        """Drop what waits for a tenant being erased."""
        with self._lock:
            self._items -= len(self._pending.pop(tenant, {}))

    def _upsert(self, tenant: str, uses: dict[str, _Uses]) -> bool:
        """True when written (or when the tenant is gone); False to try again later.

        Not ``Database.tenant``: a batch must not create the row of a tenant erased since
        its searches ran."""
        try:
            with self._db.connection() as conn:
                conn.execute("SELECT set_config(%s, %s, true)", (TENANT_SETTING, tenant))
                _upsert(conn, tenant, uses)
        except psycopg.errors.ForeignKeyViolation:
            log.info("access statistics of erased tenant %s dropped", tenant)
        except (ElephantError, psycopg.Error) as exc:  # bookkeeping only: never fail a search
            log.warning("access statistics not recorded yet (kept for the next batch): %s", exc)
            return False
        return True

    def _keep(self, tenant: str, uses: dict[str, _Uses]) -> None:
        """A batch that could not be written waits for the next one (up to a cap)."""
        with self._lock:
            if self._items + len(uses) > MAX_PENDING_ITEMS:
                log.warning("access statistics of %d items dropped: too many waiting", len(uses))
                return
            mine = self._pending.setdefault(tenant, {})
            for item, use in uses.items():
                self._items += _add(mine, item, use)


def _add(uses: dict[str, _Uses], item: str, use: _Uses) -> int:
    """Add ``use`` to the item's uses; 1 when the item is new, else 0."""
    seen = uses.get(item)
    if seen is None:
        uses[item] = use
        return 1
    seen.count += use.count
    seen.last_at = max(seen.last_at, use.last_at)
    return 0


def _upsert(conn: Connection, tenant: str, uses: dict[str, _Uses]) -> None:
    ordered = sorted(uses.items())
    conn.execute(
        load_sql("retrieval/access_record.sql"),
        {
            "tenant": tenant,
            "ids": [item for item, _ in ordered],
            "kinds": [use.kind for _, use in ordered],
            "counts": [use.count for _, use in ordered],
            "last_at": [use.last_at for _, use in ordered],
        },
    )


def record_use(conn: Connection, tenant: str, kind: ItemKind, item_id: str) -> None:
    """One use written at once, in the caller's transaction (helpful feedback)."""
    _upsert(conn, tenant, {item_id: _Uses(kind, 1, datetime.now(UTC))})
