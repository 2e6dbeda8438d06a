"""Prometheus metrics: what the services count as they work, and what a scrape reads.

The counters live in one registry per process (``REGISTRY``, not prometheus_client's
global default, so nothing a library registers there shows up, and several apps in one
process share the counters instead of colliding). A scrape adds what only a running
app can tell, read at scrape time: its connection pool and the job queue's depth.

Labels are closed vocabularies (operation, kind, status, route template), never a
tenant id nor a raw path, so /metrics says nothing about any tenant's data.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

import psycopg
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from app.db.resources import load_sql
from app.errors import DatabaseUnavailable, ElephantError

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

    from app.config import MetricsSettings
    from app.db import Database
    from app.providers.llm import LLMUsage

log = logging.getLogger(__name__)


class Runtime(Protocol):
    """What a scrape reads of the running Elephant (its database), named without
    importing app.services.runtime, which imports the services that record here."""

    db: Database


CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Seconds: a request or a search phase (ms to s); an LLM call (up to minutes).
FAST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
SLOW_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0)

REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)

HTTP_REQUESTS = Counter(
    "elephant_http_requests",
    "HTTP requests answered, by method, route template and status.",
    ["method", "route", "status"],
    registry=REGISTRY,
)
HTTP_SECONDS = Histogram(
    "elephant_http_request_duration_seconds",
    "Time to the response's first byte, by method and route template.",
    ["method", "route"],
    buckets=FAST_BUCKETS,
    registry=REGISTRY,
)
SEARCH_SECONDS = Histogram(
    "elephant_search_phase_seconds",
    "Search time by phase: embedding the query variants, the hybrid SQL statement (every "
    "lane), the reranker, the whole search.",
    ["phase"],
    buckets=FAST_BUCKETS,
    registry=REGISTRY,
)
EMBEDDING_SECONDS = Histogram(
    "elephant_embedding_seconds",
    "Time a caller waited for vectors, by kind (query or document).",
    ["kind"],
    buckets=FAST_BUCKETS,
    registry=REGISTRY,
)
EMBEDDED_TEXTS = Counter(
    "elephant_embedded_texts", "Texts embedded, by kind.", ["kind"], registry=REGISTRY
)
JOBS = Counter(
    "elephant_jobs",
    "Job attempts finished by this process, by kind and outcome (done; retry: failed, "
    "queued again; failed: out of attempts).",
    ["kind", "outcome"],
    registry=REGISTRY,
)
LLM_CALLS = Counter(
    "elephant_llm_calls",
    "LLM calls, by operation, model and outcome (ok or error).",
    ["operation", "model", "outcome"],
    registry=REGISTRY,
)
LLM_TOKENS = Counter(
    "elephant_llm_tokens",
    "LLM tokens, by operation, model and direction (in: prompt; out: completion).",
    ["operation", "model", "direction"],
    registry=REGISTRY,
)
LLM_SECONDS = Histogram(
    "elephant_llm_call_seconds",
    "LLM call latency (retries included), by operation.",
    ["operation"],
    buckets=SLOW_BUCKETS,
    registry=REGISTRY,
)
GATE_DECISIONS = Counter(
    "elephant_gate_decisions",
    "Admission gate verdicts, by memory kind and decision (accepted, rejected, forced, duplicate).",
    ["kind", "decision"],
    registry=REGISTRY,
)
SCRAPE_ERRORS = Counter(
    "elephant_scrape_errors",
    "Scrapes that could not read a source (the database): its gauges were left out.",
    ["source"],
    registry=REGISTRY,
)

# ---------------------------------------------------------------- what services record


def record_search(
    variants: int, embedding_ms: float, sql_ms: float, rerank_ms: float | None, started: float
) -> None:
    """The phases search() timed (ms); ``started``: its perf_counter() at the start."""
    SEARCH_SECONDS.labels("embedding").observe(embedding_ms / 1000)
    SEARCH_SECONDS.labels("sql").observe(sql_ms / 1000)
    if rerank_ms is not None:
        SEARCH_SECONDS.labels("rerank").observe(rerank_ms / 1000)
    SEARCH_SECONDS.labels("total").observe(time.perf_counter() - started)
    EMBEDDING_SECONDS.labels("query").observe(embedding_ms / 1000)
    EMBEDDED_TEXTS.labels("query").inc(variants)


@contextmanager
def embedding(kind: str, texts: int) -> Iterator[None]:
    """Time a call to the embedder (``kind``: query or document)."""
    started = time.perf_counter()
    yield
    EMBEDDING_SECONDS.labels(kind).observe(time.perf_counter() - started)
    EMBEDDED_TEXTS.labels(kind).inc(texts)


def record_llm(operation: str, usage: LLMUsage, *, ok: bool) -> None:
    model = f"{usage.provider}/{usage.model}"
    LLM_CALLS.labels(operation, model, "ok" if ok else "error").inc()
    LLM_TOKENS.labels(operation, model, "in").inc(usage.tokens_in)
    LLM_TOKENS.labels(operation, model, "out").inc(usage.tokens_out)
    LLM_SECONDS.labels(operation).observe(usage.latency_ms / 1000)


def record_job(kind: str, outcome: str) -> None:
    JOBS.labels(kind, outcome).inc()


def record_gate(kind: str, decision: str) -> None:
    GATE_DECISIONS.labels(kind, decision).inc()


# ---------------------------------------------------------------- what a scrape reads


class RuntimeCollector(Collector):
    """What one app knows at scrape time: its pool, the job queue, the LLM cost at its
    prices. The queue is read over one short connection with a statement timeout; if the
    database does not answer, its gauges are left out and
    elephant_scrape_errors_total{source="database"} counts it."""

    def __init__(
        self, get_elephant: Callable[[], Runtime | None], settings: MetricsSettings
    ) -> None:
        self._get_elephant = get_elephant
        self._settings = settings
        self._lock = threading.Lock()  # one queue query at a time, however many scrapers

    def collect(self) -> Iterator[Metric]:
        yield from _llm_cost(self._settings)
        elephant = self._get_elephant()
        if elephant is None:  # not started yet
            return
        try:
            pool = elephant.db.pool
        except DatabaseUnavailable:  # closed
            return
        yield from _pool_metrics({"app": pool})
        yield from self._queue(elephant)

    def _queue(self, elephant: Runtime) -> Iterator[Metric]:
        depth = GaugeMetricFamily(
            "elephant_queue_jobs",
            "Jobs waiting (queued) or running, by kind and status.",
            labels=["kind", "status"],
        )
        timeout = str(self._settings.db_timeout_ms)
        try:
            with self._lock, elephant.db.admin_connection() as conn:
                conn.execute("SELECT set_config('statement_timeout', %s, false)", (timeout,))
                rows = conn.execute(load_sql("ops/queue_depth.sql")).fetchall()
        except (ElephantError, psycopg.Error) as exc:  # reported, and the scrape goes on
            SCRAPE_ERRORS.labels("database").inc()
            log.warning("metrics: the job queue could not be read: %s", exc)
            return
        for kind, status, count in rows:
            depth.add_metric([str(kind), str(status)], float(count))
        yield depth


def _llm_cost(settings: MetricsSettings) -> Iterator[Metric]:
    """USD from the token counters at the configured prices (none when no price is set)."""
    prices = {"in": settings.llm_price_in_per_mtok, "out": settings.llm_price_out_per_mtok}
    if not any(prices.values()):
        return
    cost: dict[tuple[str, str], float] = {}
    for family in LLM_TOKENS.collect():
        for sample in family.samples:
            if not sample.name.endswith("_total"):
                continue
            key = (sample.labels["operation"], sample.labels["model"])
            price = prices[sample.labels["direction"]]
            cost[key] = cost.get(key, 0.0) + sample.value * price / 1e6
    family = CounterMetricFamily(
        "elephant_llm_cost_usd",
        "LLM cost in USD at metrics.llm_price_in/out_per_mtok, by operation and model.",
        labels=["operation", "model"],
    )
    for (operation, model), usd in sorted(cost.items()):
        family.add_metric([operation, model], usd)
    yield family


def _pool_metrics(
    pools: dict[str, ConnectionPool],
) -> Iterator[Metric]:
    """psycopg_pool's own statistics (get_stats: counters since the pool opened)."""
    gauges = {
        "pool_size": ("elephant_db_pool_connections", "Connections the pool holds."),
        "pool_available": ("elephant_db_pool_idle", "Idle connections in the pool."),
        "pool_max": ("elephant_db_pool_max", "The pool's maximum size."),
        "requests_waiting": ("elephant_db_pool_waiting", "Callers waiting for a connection."),
    }
    counters = {
        "requests_num": ("elephant_db_pool_requests", "Connections asked of the pool."),
        "requests_errors": (
            "elephant_db_pool_request_errors",
            "Requests for a connection that failed (timeout, pool closed).",
        ),
        "connections_lost": (
            "elephant_db_pool_connections_lost",
            "Connections found broken and dropped.",
        ),
    }
    stats = {name: pool.get_stats() for name, pool in pools.items()}
    for key, (metric, doc) in gauges.items():
        gauge = GaugeMetricFamily(metric, doc, labels=["pool"])
        for name, values in stats.items():
            gauge.add_metric([name], float(values.get(key, 0)))
        yield gauge
    for key, (metric, doc) in counters.items():
        counter = CounterMetricFamily(metric, doc, labels=["pool"])
        for name, values in stats.items():
            counter.add_metric([name], float(values.get(key, 0)))
        yield counter
    wait = CounterMetricFamily(
        "elephant_db_pool_wait_seconds", "Time callers waited for a connection.", labels=["pool"]
    )
    for name, values in stats.items():
        wait.add_metric([name], values.get("requests_wait_ms", 0) / 1000)
    yield wait


class _Forward(Collector):
    """The process's counters, seen through an app's registry."""

    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()


def app_registry(
    get_elephant: Callable[[], Runtime | None], settings: MetricsSettings
) -> CollectorRegistry:
    """What one app's /metrics shows: the process's counters and the app's runtime."""
    registry = CollectorRegistry()
    # The runtime first: a source it cannot read counts in elephant_scrape_errors_total,
    # which this same scrape then shows.
    registry.register(RuntimeCollector(get_elephant, settings))
    registry.register(_Forward())
    return registry


def render(registry: CollectorRegistry) -> bytes:
    """The Prometheus text exposition of ``registry``."""
    return generate_latest(registry)
