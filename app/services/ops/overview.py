"""A tenant at a glance: what it stores, how that grew, the job queue, the gate, LLM usage.

The console's landing page reads it, and GET /usage serves its LLM part. Counts come
from :func:`app.services.ops.stats.stats` (so the page and GET /stats agree), the gate
summary from :func:`app.services.gate.decisions.metrics`, job rows from
:mod:`app.services.jobs.queue`; growth and usage are one statement each
(``sql/ops/overview_growth.sql``, ``sql/ops/llm_usage.sql``), all under the tenant's
row-level security. Days are UTC days, as everywhere in the console.

Cost is tokens at the configured prices (metrics.llm_price_in_per_mtok /
llm_price_out_per_mtok, the same settings /metrics prices its counters with). With
no price set there is no cost: the report says "cost not configured" rather than
showing $0, which would read as "free".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from app.config import MetricsSettings
from app.db.resources import load_sql
from app.db.runtime import Connection
from app.errors import InvalidInput
from app.services.gate import decisions as gate_log
from app.services.gate.decisions import GateMetrics
from app.services.jobs import queue
from app.services.jobs.queue import JobInfo
from app.services.ops.stats import StatsReport, stats
from app.services.runtime import Elephant

MAX_DAYS = 365
FAILED_JOBS_SHOWN = 10
JOB_STATES = ("queued", "running", "done", "failed")
COST_NOT_CONFIGURED = (
    "cost not configured (set metrics.llm_price_in_per_mtok and metrics.llm_price_out_per_mtok)"
)


@dataclass(frozen=True, slots=True)
class GrowthDay:
    """One UTC day: rows added that day, and the totals stored at its end."""

    day: date
    memories_added: int
    facts_added: int
    memories_total: int
    facts_total: int


@dataclass(frozen=True, slots=True)
class Prices:
    """USD per million tokens; ``configured`` false when neither price is set (no cost)."""

    in_per_mtok: float
    out_per_mtok: float
    configured: bool
    note: str


@dataclass(frozen=True, slots=True)
class UsageRow:
    """LLM calls summed over a group: one day and operation, or (``day`` null) one
    operation over the window, or (``operation`` null) one day, or (both null) all.
    ``cost_usd`` is null when no price is configured; latencies are null without calls."""

    day: date | None
    operation: str | None
    calls: int
    failures: int
    tokens_in: int
    tokens_out: int
    latency_ms_mean: float | None
    latency_ms_p95: float | None
    cost_usd: float | None


@dataclass(frozen=True, slots=True)
class UsageReport:
    """LLM usage of the last ``days`` UTC days (``since`` to ``until``, both included).

    ``by_day`` has every day of the window (zeros included); ``by_day_operation`` only
    the groups with calls; ``operations``: every operation seen, in name order."""

    days: int
    since: date
    until: date
    prices: Prices
    total: UsageRow
    operations: list[str]
    by_operation: list[UsageRow]
    by_day: list[UsageRow]
    by_day_operation: list[UsageRow]


@dataclass(frozen=True, slots=True)
class QueueSummary:
    """Jobs by status (``depth``: waiting or running). ``failed_jobs``: the newest failed
    jobs with their errors, or None when the reader may not see them (admin data, as on
    GET /jobs)."""

    by_status: dict[str, int]
    depth: int
    failed: int
    failed_jobs: list[JobInfo] | None


@dataclass(frozen=True, slots=True)
class Overview:
    tenant: str
    days: int
    stats: StatsReport
    growth: list[GrowthDay]
    queue: QueueSummary
    gate: GateMetrics
    usage: UsageReport


def window(days: int, today: date | None = None) -> tuple[date, date, datetime]:
    """The last ``days`` UTC days up to today: first day, last day, and the first day's
    midnight (UTC) as the timestamp rows are compared with."""
    if not 1 <= days <= MAX_DAYS:
        raise InvalidInput(f"days must be between 1 and {MAX_DAYS} (got {days})")
    last = today or datetime.now(UTC).date()
    first = last - timedelta(days=days - 1)
    return first, last, datetime.combine(first, time(0), tzinfo=UTC)


def prices(settings: MetricsSettings) -> Prices:
    configured = bool(settings.llm_price_in_per_mtok or settings.llm_price_out_per_mtok)
    note = (
        f"at ${settings.llm_price_in_per_mtok:g} in / ${settings.llm_price_out_per_mtok:g} out "
        "per million tokens (metrics.llm_price_in_per_mtok / llm_price_out_per_mtok)"
        if configured
        else COST_NOT_CONFIGURED
    )
    return Prices(
        in_per_mtok=settings.llm_price_in_per_mtok,
        out_per_mtok=settings.llm_price_out_per_mtok,
        configured=configured,
        note=note,
    )


def cost(tokens_in: int, tokens_out: int, at: Prices) -> float | None:
    """USD for these tokens at ``at`` (None when no price is configured)."""
    if not at.configured:
        return None
    return round((tokens_in * at.in_per_mtok + tokens_out * at.out_per_mtok) / 1e6, 6)


def growth(
    conn: Connection, tenant: str, first: date, last: date, since: datetime
) -> list[GrowthDay]:
    rows = conn.execute(
        load_sql("ops/overview_growth.sql"),
        {"tenant": tenant, "first": first, "last": last, "since": since},
    ).fetchall()
    return [GrowthDay(*row) for row in rows]


def llm_usage(
    conn: Connection, tenant: str, days: int, at: Prices, today: date | None = None
) -> UsageReport:
    first, last, since = window(days, today)
    rows = conn.execute(
        load_sql("ops/llm_usage.sql"), {"tenant": tenant, "since": since}
    ).fetchall()
    total: UsageRow | None = None
    by_operation: list[UsageRow] = []
    per_day: dict[date, UsageRow] = {}
    by_day_operation: list[UsageRow] = []
    for day, operation, no_day, no_operation, *numbers in rows:
        if day is not None and day > last:  # written after today began (a clock ahead)
            continue
        row = _usage_row(None if no_day else day, None if no_operation else operation, numbers, at)
        if no_day and no_operation:
            total = row
        elif no_day:
            by_operation.append(row)
        elif no_operation:
            per_day[day] = row
        else:
            by_day_operation.append(row)
    assert total is not None  # the empty grouping set always yields its row
    by_day = [
        per_day.get(first + timedelta(days=i)) or _no_calls(first + timedelta(days=i), at)
        for i in range(days)
    ]
    return UsageReport(
        days=days,
        since=first,
        until=last,
        prices=at,
        total=total,
        operations=sorted(row.operation for row in by_operation if row.operation is not None),
        by_operation=by_operation,
        by_day=by_day,
        by_day_operation=by_day_operation,
    )


def _usage_row(day: date | None, operation: str | None, numbers: list[Any], at: Prices) -> UsageRow:
    calls, failures, tokens_in, tokens_out, mean, p95 = numbers
    return UsageRow(
        day=day,
        operation=operation,
        calls=int(calls),
        failures=int(failures),
        tokens_in=int(tokens_in),
        tokens_out=int(tokens_out),
        latency_ms_mean=None if mean is None else round(float(mean), 1),
        latency_ms_p95=None if p95 is None else round(float(p95), 1),
        cost_usd=cost(int(tokens_in), int(tokens_out), at),
    )


def _no_calls(day: date, at: Prices) -> UsageRow:
    return UsageRow(day, None, 0, 0, 0, 0, None, None, cost(0, 0, at))


def usage_report(elephant: Elephant, tenant: str, days: int) -> UsageReport:
    """GET /usage: the tenant's LLM calls by day and operation, with tokens and cost."""
    window(days)  # a bad window fails before any connection is taken
    with elephant.db.reading(tenant) as conn:
        return llm_usage(conn, tenant, days, prices(elephant.settings.metrics))


def overview(elephant: Elephant, tenant: str, days: int, *, failed_jobs: bool) -> Overview:
    """Everything the overview page shows; ``failed_jobs``: include the failed jobs'
    errors (only for readers with the admin scope)."""
    first, last, since = window(days)
    counts = stats(elephant, tenant)
    with elephant.db.reading(tenant) as conn:
        added = growth(conn, tenant, first, last, since)
        usage = llm_usage(conn, tenant, days, prices(elephant.settings.metrics), last)
        failed = queue.list_jobs(conn, tenant, "failed", FAILED_JOBS_SHOWN) if failed_jobs else None
    gate = gate_log.metrics(elephant, tenant, recent=0)
    jobs = counts.jobs
    return Overview(
        tenant=tenant,
        days=days,
        stats=counts,
        growth=added,
        queue=QueueSummary(
            by_status={state: jobs.get(state, 0) for state in JOB_STATES} | jobs,
            depth=jobs.get("queued", 0) + jobs.get("running", 0),
            failed=jobs.get("failed", 0),
            failed_jobs=failed,
        ),
        gate=gate,
        usage=usage,
    )
