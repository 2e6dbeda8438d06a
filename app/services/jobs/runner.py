"""Runs jobs of the queue by their kind: the background worker and ``?wait=true`` both call here.

A job runs inside its tenant's transaction; if it raises, that transaction rolls
back and the failure (error text, attempt count, next run time) is recorded in a
new one, so nothing is half-written and nothing is lost. A job whose source was
deleted, replaced or erased while it ran raises SourceGone before writing anything
searchable (app/services/jobs/sources.py): it is done, its reason kept as last_error.
While it runs, the runtime's LeaseKeeper renews its lease.

This module sits below the services that queue jobs (commit) and above the ones
that do a job's work (facts.pipeline); the thread that polls the queue is
app/services/jobs/worker.py, started by whoever starts the application.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import psycopg

from app.db.runtime import Connection
from app.errors import ElephantError
from app.providers.llm import LLMError
from app.services.facts.pipeline import run_extraction
from app.services.graph import mentions
from app.services.jobs import queue
from app.services.jobs.sources import SourceGone
from app.services.lifecycle import backfill, maintenance
from app.services.ops.usage import record_usage
from app.services.runtime import Elephant

log = logging.getLogger(__name__)

Handler = Callable[[Elephant, Connection, queue.Job], int]


BACKFILL_BATCH = 500


def backfill_embeddings(elephant: Elephant, conn: Connection, job: queue.Job) -> int:
    """Give vectors to memories, facts and passages stored while the embedder was down (or,
    for passages, before they existed). One batch per job, in one transaction; when a
    batch was full the job queues its successor, so a large backlog never holds one
    long transaction."""
    # passages first: a window's vector is pooled from its turns' passages
    filled = backfill.fill_passages(elephant, conn, job.tenant_id, BACKFILL_BATCH)
    done, full = backfill.fill_vectors(elephant, conn, job.tenant_id, BACKFILL_BATCH)
    if full or filled.full:
        queue.enqueue(
            conn, job.tenant_id, job.kind, {}, max_attempts=elephant.settings.worker.max_attempts
        )
    return done + filled.written


HANDLERS: dict[str, Handler] = {
    "extract_facts": run_extraction,
    "embed_memories": backfill_embeddings,
    "link_entities": mentions.backfill,  # memories stored before migration 0020
    **maintenance.HANDLERS,  # maintain_decay, maintain_dedup, ... (app/services/lifecycle)
}


def run_job(elephant: Elephant, job: queue.Job) -> int:
    """Run one claimed job to done, or record its failure; returns the handler's count."""
    handler = HANDLERS.get(job.kind)
    try:
        if handler is None:
            raise ElephantError(f"unknown job kind {job.kind!r}")
        with (
            elephant.leases.holding(job.id),
            elephant.db.tenant(job.tenant_id, create=False) as conn,
        ):
            reason: str | None = None
            try:
                count = handler(elephant, conn, job)
            except SourceGone as gone:  # raised before its first searchable row
                log.info("job %s (%s): %s", job.id, job.kind, gone.message)
                count, reason = 0, gone.message
            queue.complete(conn, job, reason)
        return count
    except (ElephantError, psycopg.Error) as exc:
        _record_failure(elephant, job, exc)
        return 0
    except Exception as exc:
        log.exception("job %s (%s) crashed", job.id, job.kind)
        _record_failure(elephant, job, exc)
        return 0


def _record_failure(elephant: Elephant, job: queue.Job, exc: BaseException) -> None:
    message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
    with elephant.db.tenant(job.tenant_id, create=False) as conn:  # erased: stays erased
        if isinstance(exc, LLMError):
            record_usage(conn, job.tenant_id, job.kind, exc.usage, ok=False, error=message)
        state = queue.fail(conn, job, message, elephant.settings.worker.backoff_s)
    log.warning(
        "job %s (%s) attempt %s failed, now %s: %s", job.id, job.kind, job.attempts, state, message
    )


def drain(elephant: Elephant, *, limit: int | None = None) -> int:
    """Run claimable jobs until none is left (or ``limit`` ran); returns how many ran."""
    ran = 0
    while limit is None or ran < limit:
        with elephant.db.worker_connection() as conn:
            jobs = queue.claim(conn, 1)
        if not jobs:
            return ran
        run_job(elephant, jobs[0])
        ran += 1
    return ran


def run_job_now(
    elephant: Elephant, tenant: str, job_id: int, timeout_s: float = 300.0
) -> tuple[int, str]:
    """``?wait=true``: run this job in the caller's thread, or wait for the worker that has it.

    Returns (facts stored by this call, the job's status afterwards). A job that still
    reads "queued" but cannot be claimed is being claimed by a worker at this moment (its
    row is locked, its claim not yet committed): keep trying until one of us has it.
    The commit made the tenant's row; an erasure meanwhile is not undone here.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        with elephant.db.tenant(tenant, create=False) as conn:
            job = queue.claim_one(conn, tenant, job_id)
        if job is not None:
            count = run_job(elephant, job)
            with elephant.db.tenant(tenant, create=False) as conn:
                return count, queue.status(conn, tenant, job_id) or "missing"
        with elephant.db.tenant(tenant, create=False) as conn:
            state = queue.status(conn, tenant, job_id) or "missing"
        if state not in ("queued", "running") or time.monotonic() > deadline:
            return 0, state
        time.sleep(0.05)
