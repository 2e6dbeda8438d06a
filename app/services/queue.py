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

from app.db.runtime import Connection, Database

# A running job whose worker went silent this long is claimed again; the worker renews
# it while the job runs (app/services/leases.py).
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
    conn: Connection, tenant: str, kind: str, payload: dict[str, Any], *, max_attempts: int
) -> int:
    row = conn.execute(
        "INSERT INTO jobs (tenant_id, kind, payload, max_attempts) VALUES (%s, %s, %s, %s) "
        "RETURNING id",
        (tenant, kind, json.dumps(payload), max_attempts),
    ).fetchone()
    assert row is not None
    return int(row[0])


def claim(conn: Connection, limit: int = 1) -> list[Job]:
    rows = conn.execute(
        "SELECT id, tenant_id, kind, payload, attempts, max_attempts "
        "FROM elephant_claim_jobs(%s, %s, %s)",
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


def claim_one(conn: Connection, job_id: int) -> Job | None:
    """Claim a given job of the current tenant now (``?wait=true``), unless a worker has it."""
    row = conn.execute(
        "UPDATE jobs SET status = 'running', attempts = attempts + 1, locked_by = %s, "
        "locked_at = now(), lease_expires_at = now() + make_interval(secs => %s), "
        "updated_at = now() "
        "WHERE id = (SELECT id FROM jobs WHERE id = %s AND status = 'queued' "
        "            FOR UPDATE SKIP LOCKED) "
        "RETURNING id, tenant_id, kind, payload, attempts, max_attempts",
        (worker_name(), LEASE_SECONDS, job_id),
    ).fetchone()
    return Job(*row) if row else None


def complete(conn: Connection, job: Job) -> None:
    conn.execute(
        "UPDATE jobs SET status = 'done', finished_at = now(), updated_at = now(), "
        "last_error = NULL, lease_expires_at = NULL WHERE id = %s",
        (job.id,),
    )


def fail(conn: Connection, job: Job, error: str, backoff_s: float) -> str:
    """Record a failed attempt; return the new status (queued again, or failed)."""
    final = job.attempts >= job.max_attempts
    delay = backoff_s * (2 ** max(job.attempts - 1, 0))
    conn.execute(
        "UPDATE jobs SET status = %s, last_error = %s, updated_at = now(), "
        "locked_by = NULL, locked_at = NULL, lease_expires_at = NULL, "
        "run_after = now() + make_interval(secs => %s), "
        "finished_at = CASE WHEN %s THEN now() END WHERE id = %s",
        ("failed" if final else "queued", error[:2000], delay, final, job.id),
    )
    return "failed" if final else "queued"


def status(conn: Connection, job_id: int) -> str | None:
    row = conn.execute("SELECT status FROM jobs WHERE id = %s", (job_id,)).fetchone()
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
    """Jobs per status, and the latest jobs (newest first)."""

    counts: dict[str, int]
    jobs: list[JobInfo]


def list_jobs(conn: Connection, state: str | None, limit: int) -> list[JobInfo]:
    rows = conn.execute(
        "SELECT id, kind, status, attempts, max_attempts, run_after, last_error, created_at, "
        "finished_at FROM jobs WHERE (%s::text IS NULL OR status = %s) "
        "ORDER BY id DESC LIMIT %s",
        (state, state, limit),
    ).fetchall()
    return [JobInfo(*row) for row in rows]


def counts(conn: Connection) -> dict[str, int]:
    rows = conn.execute("SELECT status, count(*) FROM jobs GROUP BY status").fetchall()
    return {str(state): int(n) for state, n in rows}


def overview(db: Database, tenant: str, state: str | None, limit: int) -> JobsOverview:
    with db.tenant(tenant) as conn:
        return JobsOverview(counts=counts(conn), jobs=list_jobs(conn, state, limit))
