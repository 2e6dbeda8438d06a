"""Access statistics (count, last access) written off the request path."""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor

import psycopg

from app.db import Database
from app.errors import ElephantError

log = logging.getLogger(__name__)


class AccessRecorder:
    """One background thread applies the updates in order; a search never waits for them."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="elephant-access")
        self._last: Future[None] | None = None

    def record(self, tenant: str, memory_ids: list[str], fact_ids: list[str]) -> None:
        if memory_ids or fact_ids:
            self._last = self._pool.submit(self._apply, tenant, memory_ids, fact_ids)

    def flush(self, timeout_s: float = 10.0) -> None:
        """Wait for the updates submitted so far (tests, shutdown)."""
        if self._last is not None:
            self._last.result(timeout=timeout_s)

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def _apply(self, tenant: str, memory_ids: list[str], fact_ids: list[str]) -> None:
        try:
            with self._db.tenant(tenant) as conn:
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
        except (ElephantError, psycopg.Error) as exc:  # statistics only: never fail a search
            log.warning("access statistics not recorded: %s", exc)
