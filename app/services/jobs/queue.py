"""The Postgres work queue: enqueue inside the writer's transaction, claim with SKIP LOCKED.

Claiming goes through ``elephant_claim_jobs`` (an owner-run function, because a
worker serves every tenant), which only the worker role may call; a claim holds
its job for ``LEASE_SECONDS`` (recorded in the row), so nobody takes over a
running job before its lease ends. Finishing and failing happen inside the
job's tenant transaction. A failed attempt is retried after ``backoff * 2^(n-1)``
seconds and ends as ``failed`` after ``max_attempts``, with its last error kept.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.db.resources import load_sql
from app.db.runtime import Connection, Database
from app.protocol import JSONObject
from app.services.common import paging
from app.services.ops import metrics

# A running job whose worker went silent this long is claimed again; the worker renews
# it while the job runs (app/services/jobs/leases.py).
LEASE_SECONDS = 30
LeaseAction = Callable[[Connection, list[int]], int]


@dataclass(frozen=True)
class Job:
    id: int
    tenant_id: str
    kind: str
    payload: dict[str, Any]
    attempts: int
    max_attempts: int


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def enqueue(
    conn: Connection, tenant: str, kind: str, payload: JSONObject, *, max_attempts: int
) -> int:
    row = conn.execute(
        load_sql("jobs/enqueue.sql"),
        (tenant, kind, json.dumps(payload), max_attempts),
    ).fetchone()
    assert row is not None
    return int(row[0])


def claim(conn: Connection, limit: int = 1) -> list[Job]:
    rows = conn.execute(
        load_sql("jobs/claim.sql"),
        (worker_name(), limit, LEASE_SECONDS),
    ).fetchall()
    return [Job(*row) for row in rows]


def renew(conn: Connection, ids: list[int]) -> int:
    """Extend the leases of running jobs this worker holds (worker role)."""
    row = conn.execute(
        "SELECT elephant_renew_leases(%s, %s, %s)", (worker_name(), ids, LEASE_SECONDS)
    ).fetchone()
    return int(row[0]) if row else 0


def release(conn: Connection, ids: list[int]) -> int:
    """Hand unfinished jobs back to the queue at shutdown (worker role)."""
    row = conn.execute("SELECT elephant_release_jobs(%s, %s)", (worker_name(), ids)).fetchone()
    return int(row[0]) if row else 0


def claim_one(conn: Connection, tenant: str, job_id: int) -> Job | None:
    """Claim a given job of the current tenant now (``?wait=true``), unless a worker has it."""
    row = conn.execute(
        load_sql("jobs/claim_one.sql"),
        {"worker": worker_name(), "lease": LEASE_SECONDS, "tenant": tenant, "id": job_id},
    ).fetchone()
    return Job(*row) if row else None


def complete(conn: Connection, job: Job, reason: str | None = None) -> None:
    """The job is done; ``reason`` says why it wrote nothing (kept as its last_error)."""
    conn.execute(load_sql("jobs/complete.sql"), (reason, job.tenant_id, job.id))
    metrics.record_job(job.kind, "done")


def fail(conn: Connection, job: Job, error: str, backoff_s: float) -> str:
    """Record a failed attempt; return the new status (queued again, or failed)."""
    final = job.attempts >= job.max_attempts
    delay = backoff_s * (2 ** max(job.attempts - 1, 0))
    conn.execute(
        load_sql("jobs/fail.sql"),
        ("failed" if final else "queued", error[:2000], delay, final, job.tenant_id, job.id),
    )
    metrics.record_job(job.kind, "failed" if final else "retry")
    return "failed" if final else "queued"


def status(conn: Connection, tenant: str, job_id: int) -> str | None:
    row = conn.execute(
        "SELECT status FROM jobs WHERE tenant_id = %s AND id = %s", (tenant, job_id)
    ).fetchone()
    return str(row[0]) if row else None


@dataclass(frozen=True, slots=True)
class JobInfo:
    """A background job as an operator sees it (never its payload)."""

    id: int
    kind: str
    status: str
    attempts: int
    max_attempts: int
    run_after: datetime
    last_error: str | None
    created_at: datetime
    finished_at: datetime | None


@dataclass(frozen=True, slots=True)
class JobsOverview:
    """Jobs per status, and one page of jobs (newest first): ``next_cursor`` continues
    (None: the last page); ``jobs`` repeats ``items`` (its name before paging; deprecated)."""

    counts: dict[str, int]
    items: list[JobInfo]
    next_cursor: str | None
    jobs: list[JobInfo]


JOBS_LISTING = "jobs"


def list_jobs(
    conn: Connection, tenant: str, state: str | None, limit: int, before: int | None = None
) -> list[JobInfo]:
    """Newest first (by id), only those older than ``before`` when given."""
    rows = conn.execute(
        load_sql("jobs/list.sql"),
        {"tenant": tenant, "state": state, "before": before, "limit": limit},
    ).fetchall()
    return [JobInfo(*row) for row in rows]


def counts(conn: Connection, tenant: str) -> dict[str, int]:
    rows = conn.execute(
        "SELECT status, count(*) FROM jobs WHERE tenant_id = %s GROUP BY status", (tenant,)
    ).fetchall()
    return {str(state): int(n) for state, n in rows}


def overview(
    db: Database, tenant: str, state: str | None, limit: int, cursor: str | None = None
) -> JobsOverview:
    """The counts and one page of jobs, after the cursor's job when there is one."""
    paging.check_limit(limit)
    before = paging.decode(JOBS_LISTING, cursor, (int,))[0] if cursor is not None else None
    with db.tenant(tenant) as conn:
        found = list_jobs(conn, tenant, state, limit + 1, before)
        by_status = counts(conn, tenant)
    items = found[:limit]
    following = paging.encode(JOBS_LISTING, (items[-1].id,)) if len(found) > limit else None
    return JobsOverview(counts=by_status, items=items, next_cursor=following, jobs=items)
