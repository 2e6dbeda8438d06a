"""The search statement runs on one generic plan per connection (search.generic_plan).

A generic plan is made without the parameter values, so it must still walk every
lane's index whatever they are: EXPLAIN (GENERIC_PLAN) of the real statement, as the
app role inside a tenant, proves it. The prepared statement's counters prove that
search really runs it generically (and custom with the setting off), and the two
modes answer the same rows in the same order.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg.adapt import Transformer

from app.config import Settings
from app.db.runtime import Connection
from app.services.retrieval.schemas import SearchRequest
from app.services.retrieval.search import prepare, run_statement, statement, statement_params
from app.services.runtime import Elephant
from tests.conftest import not_pooled
from tests.integration.test_search_plans import plan_nodes, seed_tenant, unit_vector

pytestmark = not_pooled(
    "about server-side prepared statements, which are off behind a transaction pooler"
)

T = "generic"
NAMED, NEIGHBOURS = ["entity-3"], ["entity-7", "entity-11"]
LANE_INDEXES = {
    "memories_embedding_hnsw",
    "facts_embedding_hnsw",
    "passages_embedding_hnsw",
    "fact_entities_entity",
    "facts_preferences_hnsw",
}
BM25_INDEXES = {"memories_text_bm25", "facts_text_bm25"}
QUERIES = ["w40x w41x Entity-7 story", "w3x w9x", "w120x entity-3 w7x w8x"]


@pytest.fixture(scope="module")
def seeded(elephant: Elephant) -> Elephant:
    seed_tenant(elephant, T, 1500, random.Random(21))
    seed_tenant(elephant, "generic-other", 500, random.Random(22))
    with elephant.db.admin_connection() as conn:
        conn.execute("VACUUM ANALYZE memories, facts, fact_entities, passages")
    return elephant


def params_for(elephant: Elephant, engine: str, query: str) -> dict[str, Any]:
    rng = random.Random(query)
    dim = elephant.settings.embedding.dim
    variants = [query, query.split()[0]]
    vectors = [np.array(unit_vector(rng, dim), dtype=np.float32) for _ in variants]
    request = SearchRequest(query=query)
    return statement_params(
        elephant,
        request,
        variants,
        vectors,
        engine,
        tenant=T,
        way="shared",
        graph=(NAMED, NEIGHBOURS),
    )


def generic_plan_indexes(conn: Connection, engine: str, params: dict[str, Any]) -> set[str]:
    """Index names in EXPLAIN (GENERIC_PLAN): the statement with $n placeholders, no values."""
    from psycopg._queries import PostgresQuery

    query = PostgresQuery(Transformer(conn))
    query.convert(statement(engine), params)
    row = conn.execute(b"EXPLAIN (GENERIC_PLAN, FORMAT JSON) " + query.query).fetchone()
    assert row is not None
    return {str(n["Index Name"]) for n in plan_nodes(row[0][0]["Plan"]) if "Index Name" in n}


def engines(elephant: Elephant) -> Iterator[str]:
    yield "tsvector"
    caps = elephant.db.capabilities
    if caps is not None and caps.textsearch:
        yield "bm25"


def test_the_generic_plan_walks_every_lane_index(seeded: Elephant) -> None:
    for engine in engines(seeded):
        params = params_for(seeded, engine, QUERIES[0])
        with seeded.db.tenant(T) as conn:
            prepare(conn, seeded, max(params["windows"], params["facts"]))
            used = generic_plan_indexes(conn, engine, params)
        wanted = LANE_INDEXES | (BM25_INDEXES if engine == "bm25" else set())
        assert wanted <= used, f"{engine}: not in the generic plan: {sorted(wanted - used)}"


def plan_counts(conn: Connection) -> tuple[int, int]:
    row = conn.execute(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements "
        "WHERE statement LIKE '%%lane_scores AS%%'"
    ).fetchone()
    assert row is not None, "the search statement is not a prepared statement"
    return int(row[0]), int(row[1])


def with_generic_plan(elephant: Elephant, on: bool) -> Elephant:
    search = elephant.settings.search.model_copy(update={"generic_plan": on})
    settings: Settings = elephant.settings.model_copy(update={"search": search})
    clone = Elephant(settings=settings, db=elephant.db, embedder=elephant.embedder, llm=None)
    return clone


@pytest.mark.parametrize("generic", [True, False], ids=["generic", "custom"])
def test_search_runs_the_plan_mode_the_setting_names(seeded: Elephant, generic: bool) -> None:
    """On a fresh connection (as the pool opens them): generic from the first search, or
    Postgres's own choice, which plans the first five custom."""
    app = with_generic_plan(seeded, generic)
    engine = next(iter(engines(seeded)))
    with psycopg.connect(seeded.db.app_conninfo()) as conn:
        register_vector(conn)
        with conn.transaction():
            conn.execute("SELECT set_config('elephant.tenant_id', %s, true)", (T,))
            for query in QUERIES:
                params = params_for(app, engine, query)
                prepare(conn, app, max(params["windows"], params["facts"]))
                assert run_statement(conn, engine, params)
            counts = plan_counts(conn)
    assert counts == ((len(QUERIES), 0) if generic else (0, len(QUERIES)))


def test_generic_and_custom_plans_answer_the_same(seeded: Elephant) -> None:
    for engine in engines(seeded):
        answers: dict[bool, list[list[tuple[str, Any, float]]]] = {}
        for generic in (True, False):
            app = with_generic_plan(seeded, generic)
            answers[generic] = []
            for query in QUERIES:
                params = params_for(app, engine, query)
                with seeded.db.tenant(T) as conn:
                    prepare(conn, app, max(params["windows"], params["facts"]))
                    rows = run_statement(conn, engine, params)
                answers[generic].append([(r[0], r[1], round(float(r[12]), 9)) for r in rows])
        assert all(answers[True]), f"{engine}: every query finds something"
        assert answers[True] == answers[False], engine
