"""What a tenant has stored, and the state of the indexes that serve it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from app.db.resources import load_sql
from app.db.runtime import Connection
from app.services.graph.store import RelationCounts
from app.services.jobs import queue
from app.services.retrieval.search import keyword_engine
from app.services.runtime import Elephant

INDEXED_TABLES = ("memories", "facts", "turns", "admission_log", "jobs")
STORAGE_NOTE = "table and index sizes cover every tenant of the database"


@dataclass(frozen=True, slots=True)
class StatsMemories:
    total: int
    by_kind: dict[str, int]
    by_source: dict[str, int]
    text_bytes: int
    without_embedding: int


@dataclass(frozen=True, slots=True)
class StatsFacts:
    total: int
    by_status: dict[str, int]
    by_source: dict[str, int]
    text_bytes: int


class StatsGraph(msgspec.Struct, frozen=True, kw_only=True):
    """The tenant's knowledge graph; only ``available`` when there is no graph (disabled, or
    graph.backend age on a server without AGE)."""

    available: bool
    backend: str | UnsetType = UNSET  # age or relational
    entities: int | UnsetType = UNSET
    relations: dict[str, RelationCounts] | UnsetType = UNSET
    observations: int | UnsetType = UNSET


@dataclass(frozen=True, slots=True)
class StatsIndex:
    table: str
    name: str
    method: str
    valid: bool
    bytes: int


@dataclass(frozen=True, slots=True)
class StatsStorage:
    note: str
    tables_bytes: dict[str, int]
    indexes: list[StatsIndex]


@dataclass(frozen=True, slots=True)
class StatsReport:
    """What a tenant has stored (``jobs``: count per status), and the state of the indexes."""

    tenant: str
    memories: StatsMemories
    facts: StatsFacts
    conversations: int
    turns: int
    contradictions: int
    jobs: dict[str, int]
    graph: StatsGraph
    keyword_engine: str
    storage: StatsStorage


def stats(elephant: Elephant, tenant: str) -> StatsReport:
    """Counts may lag the primary when a read replica answers (database.replica_urls)."""
    with elephant.db.reading(tenant) as conn:
        memories = conn.execute(load_sql("ops/stats_memories.sql"), (tenant,)).fetchall()
        facts = conn.execute(load_sql("ops/stats_facts.sql"), (tenant,)).fetchall()
        counts = conn.execute(load_sql("ops/stats_counts.sql"), {"tenant": tenant}).fetchone()
        jobs = queue.counts(conn, tenant)
        graph = _graph(elephant, conn, tenant)
        indexes = conn.execute(
            load_sql("ops/stats_indexes.sql"), (list(INDEXED_TABLES),)
        ).fetchall()
        tables = conn.execute(load_sql("ops/stats_tables.sql"), (list(INDEXED_TABLES),)).fetchall()
    assert counts is not None
    return StatsReport(
        tenant=tenant,
        memories=StatsMemories(
            total=sum(row[2] for row in memories),
            by_kind=_sum_by(memories, 0),
            by_source=_sum_by(memories, 1),
            text_bytes=sum(row[3] for row in memories),
            without_embedding=sum(row[4] for row in memories),
        ),
        facts=StatsFacts(
            total=sum(row[2] for row in facts),
            by_status=_sum_by(facts, 0),
            by_source=_sum_by(facts, 1),
            text_bytes=sum(row[3] for row in facts),
        ),
        conversations=counts[0],
        turns=counts[1],
        contradictions=counts[2],
        jobs=jobs,
        graph=graph,
        keyword_engine=_engine(elephant),
        storage=StatsStorage(
            note=STORAGE_NOTE,
            tables_bytes={name: size for name, size in tables},
            indexes=[
                StatsIndex(table=table, name=name, method=method, valid=valid, bytes=size)
                for table, name, method, valid, size in indexes
            ],
        ),
    )


def _graph(elephant: Elephant, conn: Connection, tenant: str) -> StatsGraph:
    store = elephant.graph
    if store is None:
        return StatsGraph(available=False)
    observations = conn.execute(load_sql("ops/stats_observations.sql"), (tenant,)).fetchone()
    counts = store.counts(conn, tenant)
    return StatsGraph(
        available=True,
        backend=store.backend,
        entities=counts.entities,
        relations=counts.relations,
        observations=int(observations[0]) if observations else 0,
    )


def _sum_by(rows: list[tuple[Any, ...]], column: int) -> dict[str, int]:
    totals: dict[str, int] = {}
    for row in rows:
        totals[str(row[column])] = totals.get(str(row[column]), 0) + int(row[2])
    return totals


def _engine(elephant: Elephant) -> str:
    return keyword_engine(elephant)
