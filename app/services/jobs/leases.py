"""Heartbeats for running jobs: a short lease, renewed while the job runs.

A claim holds a job for ``queue.LEASE_SECONDS`` (30 s). While this process runs
the job, one thread renews the leases of every job it holds every
``HEARTBEAT_S``, through the worker role. A worker killed with -9 stops
renewing, so its jobs are claimable again within half a minute; a worker that shuts
down hands its unfinished jobs back at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from app.db.runtime import Database
from app.errors import ElephantError
from app.services.jobs import queue

log = logging.getLogger(__name__)

HEARTBEAT_S = 10.0


class LeaseKeeper:
    def __init__(self, db: Database, interval_s: float = HEARTBEAT_S) -> None:
        self._db = db
        self._interval_s = interval_s
        self._held: dict[int, int] = {}  # job id -> how many holders in this process
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @contextmanager
    def holding(self, job_id: int) -> Iterator[None]:
        """Keep the job's lease alive for the duration of the block."""
        with self._lock:
            self._held[job_id] = self._held.get(job_id, 0) + 1
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(
                    target=self._loop, name="elephant-leases", daemon=True
                )
                self._thread.start()
        try:
            yield
        finally:
            with self._lock:
                left = self._held.get(job_id, 1) - 1
                if left > 0:
                    self._held[job_id] = left
                else:
                    self._held.pop(job_id, None)

    def held(self) -> list[int]:
        with self._lock:
            return sorted(self._held)

    def close(self) -> None:
        """Stop renewing; hand back the jobs still held (the process is going away)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        abandoned = self.held()
        if abandoned:
            self._call(queue.release, abandoned)
            log.warning("handed back unfinished jobs %s", abandoned)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            ids = self.held()
            if ids:
                self._call(queue.renew, ids)

    def _call(self, action: queue.LeaseAction, ids: list[int]) -> None:
        try:
            with self._db.worker_connection() as conn:
                action(conn, ids)
        except (ElephantError, psycopg.Error) as exc:  # the database is away: try next beat
            log.warning("job leases %s not updated: %s", ids, exc)
