"""EXPLAIN proofs: every lane of the hybrid search statement stays on its index.

The tables get a few thousand rows in two tenants (random unit vectors, Zipf-like
words, entity links), so the planner has a real choice between an index and a
scan. Each plan is of the real statement (app.services.search.statement) with the
parameters the service builds (statement_params) and its session settings
(prepare), run as the app role inside a tenant, i.e. under row-level security.
The plan tree is walked for the index each lane must use.
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from app.db.resources import fragment, load_sql, splice
from app.services.runtime import Elephant
from app.services.search import SearchRequest, prepare, statement, statement_params

T = "planner"
OTHER = "bystander"
ROWS = {T: 2500, OTHER: 1000}  # memories per tenant; as many facts
ENTITIES = 120
WORDS = 600
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
NAMED, NEIGHBOURS = ["entity-3"], ["entity-7", "entity-11"]

FILTERS: dict[str, dict[str, Any]] = {
    "no filters": {},
    "every filter": {
        "source": ["chat", "api"],
        "kind": ["note", "fact"],
        "created_after": "2024-01-15",
        "created_before": "2024-12-01",
        "event_after": "2024-02-01",
        "event_before": "2024-11-01",
        "as_of": "2024-06-01",
    },
    "include_expired": {"include_expired": True, "source": "chat"},
}
ISSUE_15 = (
    "issue 15: under row-level security the tsvector @@ operator is not leakproof, so "
    "Postgres may not use it as an index condition before the tenant policy: the GIN "
    "index is not used for a tenant (the lane filters a scan instead)"
)
LANES = [
    pytest.param("bm25", "memories_embedding_hnsw", id="windows-hnsw"),
    pytest.param("bm25", "facts_embedding_hnsw", id="facts-hnsw"),
    pytest.param("bm25", "memories_text_bm25", id="keyword-memories-bm25"),
    pytest.param("bm25", "facts_text_bm25", id="keyword-facts-bm25"),
    pytest.param("bm25", "fact_entities_entity", id="graph-fact_entities"),
    pytest.param("bm25", "passages_embedding_hnsw", id="passages-hnsw"),
    pytest.param("bm25", "facts_preferences", id="preferences-partial"),
    pytest.param("tsvector", "memories_embedding_hnsw", id="tsvector-windows-hnsw"),
    pytest.param("tsvector", "facts_embedding_hnsw", id="tsvector-facts-hnsw"),
    pytest.param("tsvector", "fact_entities_entity", id="tsvector-graph-fact_entities"),
    pytest.param(
        "tsvector",
        "memories_tsv_gin",
        id="keyword-memories-gin",
        marks=pytest.mark.xfail(strict=True, reason=ISSUE_15),
    ),
    pytest.param(
        "tsvector",
        "facts_tsv_gin",
        id="keyword-facts-gin",
        marks=pytest.mark.xfail(strict=True, reason=ISSUE_15),
    ),
]


def unit_vector(rng: random.Random, dim: int) -> list[float]:
    values = [rng.gauss(0.0, 1.0) for _ in range(dim)]
    norm = sum(v * v for v in values) ** 0.5
    return [v / norm for v in values]


def vector_text(values: list[float]) -> str:
    return "[" + ",".join(f"{v:.6f}" for v in values) + "]"


def sentence(rng: random.Random, words: list[str], length: int) -> str:
    # Zipf-like: low word indices are common, high ones rare (what a query names).
    picked = [words[min(int(rng.paretovariate(1.1)) - 1, len(words) - 1)] for _ in range(length)]
    return " ".join(picked).capitalize() + "."


def seed_tenant(elephant: Elephant, tenant: str, count: int, rng: random.Random) -> None:
    dim = elephant.settings.embedding.dim
    words = [f"w{n}x" for n in range(WORDS)]
    memories, facts, links, passages = [], [], [], []
    for n in range(count):
        memory_id, fact_id = uuid.uuid4(), uuid.uuid4()
        created = EPOCH + timedelta(hours=n * 3)
        event = created - timedelta(days=1)
        memories.append(
            (
                memory_id,
                tenant,
                "window" if n % 3 else "note",
                sentence(rng, words, 40),
                vector_text(unit_vector(rng, dim)),
                ("chat", "api", "vet")[n % 3],
                event,
                f"m{n}",
                created,
            )
        )
        if n % 3 == 0:  # a long note: two passages
            for ordinal in range(2):
                vector = vector_text(unit_vector(rng, dim))
                passages.append(
                    (tenant, memory_id, ordinal, ordinal * 100, ordinal * 100 + 150, vector)
                )
        status = "superseded" if n % 10 == 0 else "active"
        facts.append(
            (
                fact_id,
                tenant,
                memory_id,
                sentence(rng, words, 12),
                vector_text(unit_vector(rng, dim)),
                event,
                event + timedelta(days=90) if status == "superseded" else None,
                status,
                created,
                created + timedelta(days=1) if status == "superseded" else None,
                ("chat", "api", "vet")[n % 3],
                f"f{n}",
                created,
                "preference" if n % 50 == 0 else "world",
            )
        )
        for key in {rng.randrange(ENTITIES), rng.randrange(ENTITIES)}:
            links.append((tenant, fact_id, f"entity-{key}", "mentions"))
    # As the superuser: COPY does not run under row-level security.
    with elephant.db.admin_connection() as conn:
        conn.execute("INSERT INTO tenants (id) VALUES (%s) ON CONFLICT DO NOTHING", (tenant,))
        copies = {
            "memories": "id, tenant_id, kind, text, embedding, source, event_at, content_hash, "
            "created_at",
            "facts": "id, tenant_id, memory_id, text, embedding, valid_from, valid_to, status, "
            "recorded_at, expired_at, source, content_hash, created_at, fact_type",
            "fact_entities": "tenant_id, fact_id, entity_key, link",
            "passages": "tenant_id, memory_id, ordinal, char_start, char_end, embedding",
        }
        tables = {
            "memories": memories,
            "facts": facts,
            "fact_entities": links,
            "passages": passages,
        }
        for table, rows in tables.items():
            query = f"COPY {table} ({copies[table]}) FROM STDIN"
            with conn.cursor() as cursor, cursor.copy(query) as copy:
                for row in rows:
                    copy.write_row(row)


@pytest.fixture(scope="module")
def seeded(elephant: Elephant) -> Elephant:
    rng = random.Random(15)
    for tenant, count in ROWS.items():
        seed_tenant(elephant, tenant, count, rng)
    with elephant.db.admin_connection() as conn:
        conn.execute("ANALYZE memories, facts, fact_entities, passages")
    return elephant


def plan_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from plan_nodes(child)


@pytest.fixture(scope="module")
def indexes_used(seeded: Elephant) -> Callable[[str, str], set[str]]:
    """Index names in the plan of the real statement, per (engine, filter set)."""
    plans: dict[tuple[str, str], set[str]] = {}
    rng = random.Random(7)
    dim = seeded.settings.embedding.dim
    variants = ["w40x w41x Entity-7 story", "w40x w41x"]
    vectors = [np.array(unit_vector(rng, dim), dtype=np.float32) for _ in variants]

    def used(engine: str, filters: str) -> set[str]:
        if (engine, filters) not in plans:
            request = SearchRequest(query=variants[0], filters=FILTERS[filters])
            params = statement_params(
                seeded, request, variants, vectors, engine, graph=(NAMED, NEIGHBOURS)
            )
            assert params["graph"] > 0 and params["windows"] > 0 and params["facts"] > 0
            with seeded.db.tenant(T) as conn:
                prepare(conn, seeded, max(params["windows"], params["facts"]))
                row = conn.execute("EXPLAIN (FORMAT JSON) " + statement(engine), params).fetchone()
            assert row is not None
            nodes = plan_nodes(row[0][0]["Plan"])
            plans[engine, filters] = {str(n["Index Name"]) for n in nodes if "Index Name" in n}
        return plans[engine, filters]

    return used


@pytest.mark.parametrize("filters", list(FILTERS))
@pytest.mark.parametrize(("engine", "index"), LANES)
def test_every_lane_uses_its_index(
    indexes_used: Callable[[str, str], set[str]], engine: str, index: str, filters: str
) -> None:
    used = indexes_used(engine, filters)
    assert index in used, f"{index} not in the plan ({engine}, {filters}): {sorted(used)}"


def test_the_seeded_tenant_sees_only_its_rows(seeded: Elephant) -> None:
    """The plans above run under row-level security, over one tenant of two."""
    with seeded.db.tenant(T) as conn:
        row = conn.execute("SELECT count(*), count(DISTINCT tenant_id) FROM memories").fetchone()
    assert row == (ROWS[T], 1)


@pytest.mark.parametrize("engine", ["bm25", "tsvector"])
def test_each_filter_is_written_once_and_spliced_into_every_lane(engine: str) -> None:
    text = statement(engine)
    assert not [line for line in text.splitlines() if line.strip().startswith("{")]
    # windows (nearest windows, windows of near turns, long notes of near passages) +
    # keyword memories + windows of found facts; facts + keyword facts + graph_facts + preferences
    assert text.count(fragment("memory_filters.sql").splitlines()[0]) == 5
    assert text.count("WHEN %(include_expired)s THEN true") == 4
    for name in ("memory_filters.sql", "fact_filters.sql", "hybrid_search.sql"):
        assert load_sql(name).count("WHEN %(include_expired)s THEN true") == (
            1 if name == "fact_filters.sql" else 0
        )
    assert "-- Filters on facts" not in text  # a fragment's header stays in its file


def test_a_slot_takes_its_fragment_indented_like_the_slot() -> None:
    spliced = splice("WHERE true\n    {memory_filters}\nLIMIT 1")
    lines = spliced.splitlines()
    assert lines[0] == "WHERE true" and lines[-1] == "LIMIT 1"
    assert all(line.startswith("    AND (") for line in lines[1:-1]), spliced
    with pytest.raises(FileNotFoundError):
        splice("  {no_such_fragment}")


@pytest.mark.parametrize("engine", ["bm25", "tsvector"])
def test_the_service_builds_every_parameter_the_statement_names(
    elephant: Elephant, engine: str
) -> None:
    named = set(re.findall(r"%\((\w+)\)[sb]", statement(engine)))
    request = SearchRequest(query="anything")
    params = statement_params(elephant, request, ["anything"], [[0.0]], engine)
    assert set(params) == named
    header = load_sql("hybrid_search.sql").split("WITH q AS (")[0]
    assert [name for name in sorted(named) if name not in header] == []  # all documented
