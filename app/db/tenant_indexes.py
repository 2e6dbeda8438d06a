"""How each tenant's vector lanes are served, and the HNSW indexes of its own it gets.

One HNSW graph per table is shared by every tenant and row-level security filters its
walk afterwards. Measured at 1M memories (docs/scale-out.md): a tenant of 5k rows beside
one of 500k waited 342 ms p50 for nearest neighbours of which a quarter were wrong, and
the big tenant paid for the walk past everyone else. So each tenant is served one of
three ways (``tenant_vector_ways``, migration 0014):

- ``exact``: below ``search.tenant_index_rows`` rows in its largest vector table
  (memories, facts, passages), its rows are read through their ``tenant_id`` index and
  sorted by distance. Exact, and a few thousand distances cost less than a graph walk.
- ``own``: above it, partial HNSW indexes of its own on each vector table
  (``<table>_embedding_t_<hash> ... WHERE tenant_id = '<tenant>'``); the search
  statement names the tenant as a literal so the planner can use them.
- ``shared``: above it, until its own indexes are valid, or while it holds at least
  OWN_MAX_SHARE of its largest table's rows (a single-tenant deployment: the shared
  graph is then its own, and a copy would double RAM and insert cost): the shared
  graphs with pgvector's iterative scan, as before.

Nothing here decides what a search finds beyond approximate vs exact: any way returns
only the tenant's rows. The keeper (run by the worker every
``search.tenant_index_check_s``, or ``elephant maintain tenant-indexes``) counts rows
per tenant, builds indexes with CREATE INDEX CONCURRENTLY (writes go on), drops those of
tenants that shrank below half the threshold or were erased, and records each way.
Building and dropping need the tables' owner: the admin connection.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import psycopg
from psycopg import sql

from app.config import validate_tenant_id
from app.db.resources import load_sql

log = logging.getLogger(__name__)

Connection = psycopg.Connection[tuple[Any, ...]]
AdminConnection = Callable[[], AbstractContextManager[Connection]]
Way = Literal["exact", "shared", "own"]

TABLES = ("memories", "facts", "passages")
_NAME_PATTERN = r"^(memories|facts|passages)_embedding_t_[0-9a-f]{16}$"
_LOCK = 0x454C5456  # advisory lock: one keeper at a time
HNSW_OPTIONS = "m = 16, ef_construction = 64"  # the shared graphs' (migration 0001)
OWN_MAX_SHARE = 0.9  # a tenant holding more of its largest table keeps the shared graphs


def index_name(table: str, tenant: str) -> str:
    """A tenant's own index on ``table``: a hash of the tenant keeps it under 63 bytes."""
    digest = hashlib.sha256(tenant.encode()).hexdigest()[:16]
    return f"{table}_embedding_t_{digest}"


@dataclass(frozen=True, slots=True)
class TenantWay:
    tenant: str
    way: Way
    vector_rows: int
    build_seconds: float | None = None
    counted_at: datetime | None = None


@dataclass(slots=True)
class KeeperReport:
    """What one run of the keeper found and did."""

    threshold: int
    ways: list[TenantWay] = field(default_factory=list)
    built: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    skipped: str | None = None  # another keeper held the lock
    seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        out = {"exact": 0, "shared": 0, "own": 0}
        for way in self.ways:
            out[way.way] += 1
        return out


@dataclass(frozen=True, slots=True)
class TenantSize:
    """A tenant's rows with a vector in its largest vector table, and its share of that
    table's rows."""

    rows: int
    share: float


def count_rows(conn: Connection) -> dict[str, TenantSize]:
    """Every tenant's size (0 rows if it has none)."""
    best: dict[str, TenantSize] = {
        str(row[0]): TenantSize(0, 0.0) for row in conn.execute("SELECT id FROM tenants").fetchall()
    }
    for table in TABLES:
        rows = conn.execute(
            sql.SQL(load_sql("db/tenant_sizes.sql")).format(table=sql.Identifier(table))
        ).fetchall()
        for tenant, count, total in rows:
            size = TenantSize(int(count), int(count) / max(1, int(total)))
            if size.rows > best.get(str(tenant), TenantSize(0, 0.0)).rows:
                best[str(tenant)] = size
    return best


def existing_indexes(conn: Connection) -> dict[str, bool]:
    """Every tenant index on the vector tables -> whether it is valid (a CREATE INDEX
    CONCURRENTLY that failed leaves an invalid one behind)."""
    rows = conn.execute(load_sql("db/tenant_index_list.sql"), (_NAME_PATTERN,)).fetchall()
    return {str(name): bool(valid) for name, valid in rows}


def _drop(conn: Connection, name: str) -> None:
    conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))


def _build(conn: Connection, table: str, tenant: str, name: str) -> None:
    conn.execute(
        sql.SQL(load_sql("db/tenant_index_build.sql")).format(
            name=sql.Identifier(name),
            table=sql.Identifier(table),
            options=sql.SQL(HNSW_OPTIONS),
            tenant=sql.Literal(tenant),
        )
    )


def _record(conn: Connection, way: TenantWay, indexed: bool) -> None:
    conn.execute(
        load_sql("db/tenant_way_record.sql"),
        {
            "tenant": way.tenant,
            "way": way.way,
            "rows": way.vector_rows,
            "indexed": indexed,
            "seconds": way.build_seconds,
        },
    )


@contextmanager
def _locked(conn: Connection) -> Iterator[bool]:
    row = conn.execute("SELECT pg_try_advisory_lock(%s)", (_LOCK,)).fetchone()
    held = bool(row and row[0])
    try:
        yield held
    finally:
        if held:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK,))


def record_counted(conn: Connection, tenant: str, rows: int, threshold: int) -> TenantWay:
    """Record the way of a tenant just counted, before the keeper's next round looks at
    it (an import): exact below ``threshold``, else the shared graphs until the keeper
    builds the tenant's own indexes."""
    way = TenantWay(tenant, "exact" if rows < threshold else "shared", rows)
    _record(conn, way, indexed=False)
    return way


def keep(
    admin: AdminConnection,
    threshold: int,
    *,
    build: bool = True,
    maintenance_work_mem_mb: int | None = None,
) -> KeeperReport:
    """Count, choose each tenant's way, build and drop indexes (see the module docstring).

    ``build=False`` records the ways only (a tenant over the threshold stays ``shared``).
    Tenants are promoted biggest first, one index at a time; each is recorded as soon as
    its indexes are valid, so searches use them while the next tenant's build runs."""
    started = time.perf_counter()
    report = KeeperReport(threshold=threshold)
    with admin() as conn:
        conn.autocommit = True
        with _locked(conn) as held:
            if not held:
                report.skipped = "another keeper is running"
                return report
            if maintenance_work_mem_mb:
                conn.execute(
                    "SELECT set_config('maintenance_work_mem', %s, false)",
                    (f"{maintenance_work_mem_mb}MB",),
                )
            conn.execute("SELECT set_config('statement_timeout', '0', false)")
            sizes = count_rows(conn)
            indexes = existing_indexes(conn)
            wanted: set[str] = set()
            for tenant, size in sorted(sizes.items(), key=lambda item: (-item[1].rows, item[0])):
                rows = size.rows
                names = [index_name(table, tenant) for table in TABLES]
                has_own = all(indexes.get(name) for name in names)
                # hysteresis: an indexed tenant keeps its indexes down to half the threshold
                big = rows >= threshold or (has_own and rows >= threshold // 2)
                if not big:
                    way = TenantWay(tenant, "exact", rows)
                    _record(conn, way, indexed=False)
                    report.ways.append(way)
                    continue
                if size.share >= OWN_MAX_SHARE and not has_own:
                    # nearly every row is its own: the shared graph is its graph already,
                    # and a copy would double the RAM and the cost of every insert
                    way = TenantWay(tenant, "shared", rows)
                    _record(conn, way, indexed=False)
                    report.ways.append(way)
                    continue
                wanted.update(names)
                if has_own:
                    way = TenantWay(tenant, "own", rows)
                    _record(conn, way, indexed=False)
                    report.ways.append(way)
                    continue
                if not build:
                    way = TenantWay(tenant, "shared", rows)
                    _record(conn, way, indexed=False)
                    report.ways.append(way)
                    continue
                _record(conn, TenantWay(tenant, "shared", rows), indexed=False)
                build_started = time.perf_counter()
                for table, name in zip(TABLES, names, strict=True):
                    if indexes.get(name) is False:  # a build that failed: start over
                        _drop(conn, name)
                    if not indexes.get(name):
                        _build(conn, table, tenant, name)
                        report.built.append(name)
                seconds = round(time.perf_counter() - build_started, 2)
                way = TenantWay(tenant, "own", rows, seconds)
                _record(conn, way, indexed=True)
                report.ways.append(way)
                log.info(
                    "tenant %s: own HNSW indexes built in %.1f s (%d rows)", tenant, seconds, rows
                )
            for name in sorted(set(indexes) - wanted):  # shrunk or erased tenants
                _drop(conn, name)
                report.dropped.append(name)
    report.seconds = round(time.perf_counter() - started, 2)
    return report


def naming_tenant(statement: str, tenant: str) -> str:
    """``statement`` with its ``%(tenant)s`` written in as a literal, so the planner can
    prove a tenant's own partial indexes (``WHERE tenant_id = '<tenant>'``); a parameter
    cannot be proved. A validated id (letters, digits, '_', '-') needs no escaping."""
    return statement.replace("%(tenant)s", "'" + validate_tenant_id(tenant) + "'")


def way_of(conn: Connection, tenant: str) -> Way:
    """The way ``tenant`` is served, from inside its transaction (row-level security shows
    the app role its own row only); a tenant not counted yet is exact."""
    row = conn.execute(
        "SELECT way FROM tenant_vector_ways WHERE tenant_id = %s", (tenant,)
    ).fetchone()
    value = str(row[0]) if row else "exact"
    return value if value in ("shared", "own") else "exact"  # type: ignore[return-value]


def ways(conn: Connection) -> list[TenantWay]:
    """Every recorded tenant's way, biggest first (admin connection: doctor)."""
    rows = conn.execute(load_sql("db/tenant_ways.sql")).fetchall()
    return [
        TenantWay(str(t), str(w), int(n), None if s is None else float(s), c)  # type: ignore[arg-type]
        for t, w, n, s, c in rows
    ]


class WayCache:
    """Each tenant's way as search reads it, for ``ttl_s`` seconds: one small read per
    tenant and interval instead of one per search. A stale entry costs speed, never
    correctness (every way returns only the tenant's rows)."""

    def __init__(self, ttl_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl_s
        self._clock = clock
        self._entries: dict[str, tuple[float, Way]] = {}

    def get(self, conn: Connection, tenant: str) -> Way:
        now = self._clock()
        cached = self._entries.get(tenant)
        if cached is not None and now - cached[0] < self._ttl:
            return cached[1]
        way = way_of(conn, tenant)
        self._entries[tenant] = (now, way)
        return way

    def forget(self, tenant: str | None = None) -> None:
        if tenant is None:
            self._entries.clear()
        else:
            self._entries.pop(tenant, None)


class Keeper:
    """Runs :func:`keep` every ``interval_s`` from the worker's loop (the first time soon
    after start); errors are logged, never raised: a search is right whatever the way."""

    def __init__(
        self,
        admin: AdminConnection,
        threshold: Callable[[], int],
        interval_s: float,
        on_change: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
        first_after_s: float = 5.0,
    ) -> None:
        self._admin = admin
        self._threshold = threshold
        self._interval = interval_s
        self._on_change = on_change
        self._clock = clock
        self._next = clock() + min(first_after_s, interval_s)

    def tick(self) -> KeeperReport | None:
        if self._interval <= 0 or self._clock() < self._next:
            return None
        self._next = self._clock() + self._interval
        try:
            report = keep(self._admin, self._threshold())
        except Exception as exc:  # noqa: BLE001 - the worker loop must go on (database down)
            log.warning("tenant vector indexes not kept: %s", exc)
            return None
        if report.built or report.dropped:
            self._on_change()
        return report
