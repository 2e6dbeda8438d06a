"""Maintenance kinds as queue jobs: their handlers, their runs, their schedule, their state.

Each kind (decay, dedup, backfill, retention; reembed once its service is there) is a
job ``maintain_<kind>`` of one tenant on the existing queue (app/services/jobs/queue.py),
so it is claimed with SKIP LOCKED, leased, retried with back-off, and runs in the
tenant's transaction under row-level security. What a run did is kept in
``maintenance_runs`` (same transaction as the work).

The schedule: the worker calls :func:`enqueue_due` every maintenance.check_interval_s;
for each kind with an interval in maintenance.schedule it queues, through
``elephant_schedule_maintenance`` (migration 0010), one job per tenant that has none
queued or running and none created within the interval. An advisory lock per kind and
a unique index (one queued or running maintain_* job per tenant and kind) make two
workers scheduling at once queue it once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

import psycopg

from app.db.resources import load_sql
from app.db.runtime import Connection
from app.errors import ElephantError
from app.services.jobs import queue
from app.services.lifecycle import backfill, decay, retention, sweep
from app.services.lifecycle.report import Report
from app.services.runtime import Elephant

log = logging.getLogger(__name__)

JOB_PREFIX = "maintain_"


class Task(Protocol):
    def __call__(
        self, elephant: Elephant, conn: Connection, tenant: str, *, dry_run: bool
    ) -> Report: ...


TASKS: dict[str, Task] = {
    "decay": decay.run,
    "dedup": sweep.run,
    "backfill": backfill.run,
    "retention": retention.run,
}
# HOOK (re-embed, app/services/ops/reembed/, built separately): a per-tenant job kind
# plugs in here as TASKS["reembed"] = <its run(elephant, conn, tenant, *, dry_run)
# returning a Report>; `elephant maintain reembed` calls that service directly.


def job_kind(kind: str) -> str:
    return JOB_PREFIX + kind


def run_job(elephant: Elephant, conn: Connection, job: queue.Job) -> int:
    """The queue handler of every maintain_* kind: run it, record the run; the count of
    rows it changed."""
    kind = job.kind.removeprefix(JOB_PREFIX)
    task = TASKS.get(kind)
    if task is None:
        raise ElephantError(f"unknown maintenance kind {kind!r}")
    started = datetime.now(UTC)
    report = task(elephant, conn, job.tenant_id, dry_run=False)
    trigger = str(job.payload.get("trigger", "schedule"))
    record(conn, report, job_id=job.id, trigger=trigger, started_at=started)
    return report.total


HANDLERS: dict[str, Callable[[Elephant, Connection, queue.Job], int]] = {
    job_kind(kind): run_job for kind in TASKS
}


def record(
    conn: Connection, report: Report, *, job_id: int | None, trigger: str, started_at: datetime
) -> None:
    conn.execute(
        load_sql("lifecycle/record_run.sql"),
        (
            report.tenant,
            report.kind,
            job_id,
            trigger,
            started_at,
            json.dumps(report.as_dict(), default=str),
        ),
    )


def last_report(conn: Connection, tenant: str, job_id: int) -> Report | None:
    """The report of the run a job made (in its tenant's transaction)."""
    row = conn.execute(
        load_sql("lifecycle/last_report.sql"),
        (tenant, job_id),
    ).fetchone()
    if row is None:
        return None
    data = row[0]
    return Report(
        kind=str(data["kind"]),
        tenant=str(data["tenant"]),
        dry_run=bool(data["dry_run"]),
        counts={str(k): int(v) for k, v in data["counts"].items()},
        detail=dict(data["detail"]),
        more=bool(data["more"]),
    )


# ------------------------------------------------------------------ tenants, schedule


def tenants(elephant: Elephant) -> list[str]:
    """Every tenant id (through the worker role, which reads no tenant's rows)."""
    with elephant.db.worker_connection() as conn:
        rows = conn.execute("SELECT id FROM elephant_maintenance_tenants() AS t(id)").fetchall()
    return [str(row[0]) for row in rows]


def scheduled(elephant: Elephant) -> dict[str, float]:
    """kind -> hours between runs, for the kinds that are scheduled and exist."""
    return {
        kind: hours
        for kind, hours in elephant.settings.maintenance.schedule.items()
        if hours > 0 and kind in TASKS
    }


def enqueue_due(elephant: Elephant) -> dict[str, int]:
    """Queue the maintenance jobs that are due, one per tenant and kind; kind -> queued."""
    attempts = elephant.settings.worker.max_attempts
    queued: dict[str, int] = {}
    with elephant.db.worker_connection() as conn:
        for kind, hours in sorted(scheduled(elephant).items()):  # one lock order for all
            row = conn.execute(
                "SELECT elephant_schedule_maintenance(%s, %s, %s)",
                (job_kind(kind), max(60, round(hours * 3600)), attempts),
            ).fetchone()
            queued[kind] = int(row[0]) if row else 0
    return queued


class Scheduler:
    """Calls :func:`enqueue_due` every maintenance.check_interval_s, the first time one
    interval after start (a short-lived process queues nothing); the worker's loop calls
    :meth:`tick` on every turn. A database outage is logged, never raised."""

    def __init__(self, elephant: Elephant, clock: Callable[[], float]) -> None:
        self._elephant = elephant
        self._clock = clock
        self._next = clock() + elephant.settings.maintenance.check_interval_s

    def tick(self) -> dict[str, int] | None:
        settings = self._elephant.settings.maintenance
        now = self._clock()
        if not settings.enabled or now < self._next or not scheduled(self._elephant):
            return None
        self._next = now + settings.check_interval_s
        try:
            queued = enqueue_due(self._elephant)
        except (ElephantError, psycopg.Error) as exc:
            log.warning("maintenance not scheduled: %s", exc)
            return None
        if any(queued.values()):
            log.info("maintenance jobs queued: %s", queued)
        return queued


# ------------------------------------------------------------------ state (doctor)


@dataclass(frozen=True, slots=True)
class KindState:
    """One maintenance kind across tenants: its interval (hours, 0 = not scheduled), its
    last finished run, its jobs now, and how many tenants it is due for."""

    kind: str
    every_hours: float
    last_run: datetime | None
    queued: int
    running: int
    failed: int
    due: int
    waiting_over_hour: int


_STATE = load_sql("lifecycle/maintenance_state.sql")


def state(elephant: Elephant) -> list[KindState]:
    """Every kind's state, read as the migrator (jobs of every tenant)."""
    every = elephant.settings.maintenance.schedule
    kinds = sorted(TASKS)
    hours = [every.get(kind, 0.0) for kind in kinds]
    with elephant.db.admin_connection() as conn:
        rows = conn.execute(
            _STATE, (kinds, [job_kind(k) for k in kinds], [h * 3600 for h in hours])
        ).fetchall()
    return [
        KindState(str(kind), hour, last, int(q), int(r), int(f), int(d), int(w))
        for (kind, last, q, r, f, d, w), hour in zip(rows, hours, strict=True)
    ]
