"""Run a maintenance kind for a tenant now (``elephant maintain``), through the queue.

A real run queues the job (or finds the one already queued: one per tenant and kind)
and runs it in this process like ``?wait=true`` does, or waits for the worker that
has it, so a CLI run and a scheduled one never overlap and both are recorded the same
way. A dry run changes nothing: it runs the kind's own logic with ``dry_run`` in a
transaction that is rolled back, and leaves no job or run behind.
"""

from __future__ import annotations

import json

from app.db.resources import load_sql
from app.errors import ElephantError, InvalidInput
from app.services.jobs.runner import run_job_now
from app.services.lifecycle.maintenance import TASKS, job_kind, last_report
from app.services.lifecycle.report import Report
from app.services.runtime import Elephant

TIMEOUT_S = 3600.0


def run_now(elephant: Elephant, tenant: str, kind: str, *, dry_run: bool) -> Report:
    task = TASKS.get(kind)
    if task is None:
        raise InvalidInput(f"unknown maintenance kind {kind!r}: one of {', '.join(sorted(TASKS))}")
    if dry_run:
        with elephant.db.tenant(tenant) as conn, conn.transaction(force_rollback=True):
            return task(elephant, conn, tenant, dry_run=True)
    with elephant.db.tenant(tenant) as conn:
        row = conn.execute(
            load_sql("lifecycle/run_job.sql"),
            (tenant, job_kind(kind), json.dumps({"trigger": "cli"}), 1),
        ).fetchone()
        if row is None:  # one is queued or running already: that one is this run
            row = conn.execute(
                load_sql("lifecycle/active_job.sql"),
                (tenant, job_kind(kind)),
            ).fetchone()
    if row is None:
        raise ElephantError(f"could not queue the {kind} job of tenant {tenant}: retry")
    job_id = int(row[0])
    _, status = run_job_now(elephant, tenant, job_id, timeout_s=TIMEOUT_S)
    with elephant.db.tenant(tenant) as conn:
        report = last_report(conn, tenant, job_id)
        error = conn.execute(
            "SELECT last_error FROM jobs WHERE tenant_id = %s AND id = %s", (tenant, job_id)
        ).fetchone()
    if status != "done" or report is None:
        why = error[0] if error and error[0] else status
        raise ElephantError(f"{kind} of tenant {tenant} did not finish (job {job_id}): {why}")
    return report
