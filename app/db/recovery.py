"""Self-healing: notice the database went away, bring it back, fail fast meanwhile.

A request that hits a broken connection reports it here. One background probe
checks whether the database answers; if not, requests fail at once with 503 and
Retry-After (instead of each waiting out the pool timeout) while the probe
keeps trying, restarting the embedded server when it died under us. When the
database answers again, the pools drop their broken connections and, after a
restart, the BM25 statistics pg_textsearch lost are rebuilt.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import psycopg

from app.errors import DatabaseUnavailable

log = logging.getLogger(__name__)

RETRY_AFTER_S = 2
PROBE_INTERVAL_S = 0.5


class Recovery:
    def __init__(
        self,
        probe: Callable[[], None],
        revive: Callable[[], bool] | None,
        on_back: Callable[[bool], None],
    ) -> None:
        """``probe`` raises when the database does not answer; ``revive`` restarts it (the
        embedded server) and says whether it did; ``on_back(restarted)`` runs once it answers."""
        self._probe = probe
        self._revive = revive
        self._on_back = on_back
        self._down_since: float | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = threading.Event()

    @property
    def down(self) -> bool:
        return self._down_since is not None

    def check_up(self) -> None:
        """Raise at once while the database is known to be down."""
        since = self._down_since
        if since is not None:
            raise DatabaseUnavailable(
                f"the database has been unreachable for {time.monotonic() - since:.1f} s and is "
                "being recovered: retry shortly",
                retry_after_s=RETRY_AFTER_S,
            )

    def failed(self) -> None:
        """A connection failed: start the probe unless one runs already."""
        with self._lock:
            if self._closed.is_set() or (self._thread is not None and self._thread.is_alive()):
                return
            self._thread = threading.Thread(
                target=self._recover, name="elephant-recovery", daemon=True
            )
            self._thread.start()

    def close(self) -> None:
        self._closed.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def _answers(self) -> bool:
        try:
            self._probe()
            return True
        except (psycopg.Error, OSError) as exc:
            log.debug("database probe failed: %s", exc)
            return False

    def _recover(self) -> None:
        if self._answers():
            self._on_back(False)  # a passing fault: drop broken pooled connections only
            return
        self._down_since = started = time.monotonic()
        log.error("database unreachable: failing requests fast while recovering")
        restarted = False
        while not self._closed.is_set():
            if self._revive is not None:
                try:
                    restarted = self._revive() or restarted
                except DatabaseUnavailable as exc:
                    log.error("could not restart the database: %s", exc.message)
            if self._answers():
                break
            self._closed.wait(PROBE_INTERVAL_S)
        if self._closed.is_set():
            return
        try:
            self._on_back(restarted)
        finally:
            self._down_since = None
        log.warning("database back after %.1f s", time.monotonic() - started)
