"""Writes a read causes (access statistics, LLM usage of a search) made off the request path.

A search may run on a read-only replica, so what it has to write goes to the primary
here, after the search, in the order it was queued.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import psycopg

from app.db import Database
from app.db.runtime import Connection
from app.errors import ElephantError
from app.providers.llm import LLMUsage
from app.services.usage import record_usage

log = logging.getLogger(__name__)


class AccessRecorder:
    """One background thread applies the updates in order; a search never waits for them."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="elephant-access")
        self._last: Future[None] | None = None

    def record(self, tenant: str, memory_ids: list[str], fact_ids: list[str]) -> None:
        if memory_ids or fact_ids:
            self._submit(
                tenant, "access statistics", lambda conn: _count(conn, memory_ids, fact_ids)
            )

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
        if usage is not None:
            self._submit(
                tenant,
                "LLM usage",
                lambda conn: record_usage(conn, tenant, operation, usage, ok=ok, error=error),
            )

    def flush(self, timeout_s: float = 10.0) -> None:
        """Wait for the updates submitted so far (tests, shutdown)."""
        if self._last is not None:
            self._last.result(timeout=timeout_s)

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def _submit(self, tenant: str, what: str, write: Callable[[Connection], None]) -> None:
        self._last = self._pool.submit(self._apply, tenant, what, write)

    def _apply(self, tenant: str, what: str, write: Callable[[Connection], None]) -> None:
        try:
            with self._db.tenant(tenant) as conn:
                write(conn)
        except (ElephantError, psycopg.Error) as exc:  # bookkeeping only: never fail a search
            log.warning("%s not recorded: %s", what, exc)


def _count(conn: Connection, memory_ids: list[str], fact_ids: list[str]) -> None:
    if memory_ids:
        conn.execute(
            "UPDATE memories SET access_count = access_count + 1, "
            "last_accessed_at = now() WHERE id = ANY(%s::uuid[])",
            (memory_ids,),
        )
    if fact_ids:
        conn.execute(
            "UPDATE facts SET access_count = access_count + 1, "
            "last_accessed_at = now() WHERE id = ANY(%s::uuid[])",
            (fact_ids,),
        )
