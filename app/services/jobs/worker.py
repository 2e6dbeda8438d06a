"""The background worker: a thread that drains the job queue until stopped.

Whoever starts the application starts it (the API's start-up, ``elephant serve``,
``elephant mcp``, ``elephant worker``); the runtime only stops it when it closes.
Running a job is app/services/jobs/runner.py. On each turn the worker also queues the
maintenance jobs that are due (app/services/lifecycle/maintenance.py, maintenance.schedule)
and, every search.tenant_index_check_s, keeps tenants' own vector indexes
(app/db/tenant_indexes.py).
"""

from __future__ import annotations

import logging
import threading
import time

from app.db.tenant_indexes import Keeper
from app.errors import ElephantError
from app.services.jobs.runner import drain
from app.services.lifecycle.maintenance import Scheduler
from app.services.runtime import Elephant

log = logging.getLogger(__name__)


class Worker:
    """A daemon thread polling the queue until stopped."""

    def __init__(self, elephant: Elephant) -> None:
        self._elephant = elephant
        self._stop = threading.Event()
        self._maintenance = Scheduler(elephant, time.monotonic)
        search = elephant.settings.search
        self._tenant_indexes = Keeper(
            elephant.db.admin_connection,
            lambda: search.tenant_index_rows,
            search.tenant_index_check_s,
            on_change=elephant.vector_ways.forget,
        )
        self._thread = threading.Thread(target=self._loop, name="elephant-worker", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 1.5) -> None:
        """Stop polling; a job still running after ``timeout_s`` is handed back to the queue
        when the runtime closes (LeaseKeeper.close), so shutdown stays quick."""
        self._stop.set()
        self._thread.join(timeout_s)

    def _loop(self) -> None:
        interval = self._elephant.settings.worker.poll_interval_s
        while not self._stop.is_set():
            self._maintenance.tick()
            self._tenant_indexes.tick()
            try:
                ran = drain(self._elephant, limit=50)
            except ElephantError as exc:  # database down: wait and try again
                log.warning("worker: %s", exc.message)
                ran = 0
            if ran == 0:
                self._stop.wait(interval)


def start_worker(elephant: Elephant) -> Worker:
    """Drain the job queue in a background thread of this process until ``elephant`` closes."""
    worker = Worker(elephant)
    elephant.stop_on_close(worker)
    worker.start()
    return worker
