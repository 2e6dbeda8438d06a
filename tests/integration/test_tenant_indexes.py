"""Many tenants on one Postgres: each served its way (app/db/tenant_indexes.py).

A small tenant is searched exactly (its rows through its tenant_id index, sorted), a big
one through HNSW indexes of its own, built online by the keeper. Proven here on the real
server: the plans of both classes (EXPLAIN of the real statement as the app role), that
the exact way returns exactly the nearest rows, that the keeper builds, keeps, drops and
repairs indexes, that writes go on while it builds and land in the new index, and that
search reports the way.
"""

from __future__ import annotations

import random
import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from pgvector.psycopg import register_vector

from app.config import Settings
from app.db.runtime import Database
from app.db.tenant_indexes import (
    TABLES,
    Keeper,
    WayCache,
    existing_indexes,
    index_name,
    keep,
    way_of,
    ways,
)
from app.errors import DatabaseUnavailable
from app.services.memory.commit import _nearest
from app.services.ops.doctor import diagnose
from app.services.retrieval.lanes import LANE_NAMES
from app.services.retrieval.schemas import SearchRequest
from app.services.retrieval.search import (
    prepare,
    run_statement,
    search,
    statement,
    statement_params,
)
from app.services.runtime import Elephant
from tests.conftest import make_settings
from tests.integration.test_search_plans import plan_nodes, seed_tenant, unit_vector

BIG, SMALL, OTHER = "ways-big", "ways-small", "ways-other"
THRESHOLD = 300  # rows in a tenant's largest vector table


@pytest.fixture(scope="module")
def settings(settings: Settings) -> Settings:
    return make_settings(
        settings.data_dir,
        embedded={"database": settings.embedded.database},
        search={"tenant_index_rows": THRESHOLD, "vector_way_cache_s": 0},
    )


@pytest.fixture(scope="module")
def seeded(elephant: Elephant) -> Elephant:
    seed_tenant(elephant, BIG, 900, random.Random(1))  # 900 memories, 900 facts
    seed_tenant(elephant, SMALL, 120, random.Random(2))
    seed_tenant(elephant, OTHER, 60, random.Random(3))
    with elephant.db.admin_connection() as conn:
        conn.execute("VACUUM ANALYZE memories, facts, passages, fact_entities")
    report = keep(elephant.db.admin_connection, THRESHOLD)
    assert report.skipped is None
    return elephant


def params(elephant: Elephant, tenant: str, query: str, way: Any) -> dict[str, Any]:
    rng = random.Random(query)
    dim = elephant.settings.embedding.dim
    vectors = [np.array(unit_vector(rng, dim), dtype=np.float32)]
    request = SearchRequest(query=query)
    return statement_params(
        elephant, request, [query], vectors, engine(elephant), tenant=tenant, way=way
    )


def engine(elephant: Elephant) -> str:
    """bm25 where pg_textsearch is there, tsvector in the managed mode (ELEPHANT_TEST_MANAGED)."""
    capabilities = elephant.db.capabilities
    return "bm25" if capabilities is not None and capabilities.textsearch else "tsvector"


def plan_indexes(elephant: Elephant, tenant: str, way: Any) -> tuple[set[str], list[str]]:
    """Index names of the nodes that ran and keys of the Sorts that sorted rows (EXPLAIN
    ANALYZE of the real statement, as the app role): the branch of the other way stays
    behind a one-time filter and returns nothing."""
    values = params(elephant, tenant, "w40x w41x story", way)
    own = tenant if way == "own" else None
    with elephant.db.tenant(tenant) as conn:
        prepare(conn, elephant, max(values["windows"], values["facts"]))
        row = conn.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + statement(engine(elephant), own), values
        ).fetchone()
    assert row is not None
    nodes = [n for n in plan_nodes(row[0][0]["Plan"]) if n.get("Actual Loops", 0) > 0]
    indexes = {str(n["Index Name"]) for n in nodes if "Index Name" in n}
    sorts = [
        " ".join(n.get("Sort Key", []))
        for n in nodes
        if n["Node Type"] == "Sort" and n.get("Actual Rows", 0) > 0
    ]
    return indexes, sorts


SORTED_ALIAS = re.compile(r"\b([pmf])(?:_\d+)?\.embedding <=>")


def exact_sort(key: str) -> bool:
    """A Sort by distance + 0: the exact way's (HNSW serves only a bare distance)."""
    return "embedding <=>" in key and "+ '0'::double precision" in key


def test_the_keeper_gives_the_big_tenant_its_own_indexes_and_the_small_ones_exact_scans(
    seeded: Elephant,
) -> None:
    found = {way.tenant: way for way in _ways(seeded.db)}
    assert found[BIG].way == "own" and found[BIG].vector_rows >= THRESHOLD
    assert found[SMALL].way == "exact" and found[OTHER].way == "exact"
    with seeded.db.admin_connection() as conn:
        valid = existing_indexes(conn)
    assert {index_name(table, BIG): True for table in TABLES}.items() <= valid.items()
    assert not any(index_name(table, SMALL) in valid for table in TABLES)
    # the app role reads its own tenant's way, and only that
    with seeded.db.tenant(SMALL) as conn:
        assert way_of(conn, SMALL) == "exact"
        assert way_of(conn, BIG) == "exact"  # not its row: hidden, read as the default
        rows = conn.execute("SELECT tenant_id FROM tenant_vector_ways").fetchall()
    assert rows == [(SMALL,)]
    with seeded.db.tenant(BIG) as conn:
        assert way_of(conn, BIG) == "own"


def _ways(db: Database) -> list[Any]:
    with db.admin_connection() as conn:
        return ways(conn)


def test_a_small_tenant_plan_scans_its_rows_exactly_and_walks_no_graph(
    seeded: Elephant,
) -> None:
    indexes, sorts = plan_indexes(seeded, SMALL, "exact")
    hnsw = {name for name in indexes if "hnsw" in name or "_embedding_t_" in name}
    assert hnsw == set(), indexes
    # its rows come through tenant-leading indexes, and are sorted by distance (+ 0)
    assert "passages_tenant" in indexes, indexes
    aliases = {alias for key in sorts if exact_sort(key) for alias in SORTED_ALIAS.findall(key)}
    assert aliases == {"p", "m", "f"}, sorts  # passages, windows (memories), facts


def test_a_big_tenant_plan_walks_its_own_indexes(seeded: Elephant) -> None:
    indexes, sorts = plan_indexes(seeded, BIG, "own")
    own = {index_name(table, BIG) for table in TABLES}
    assert own <= indexes, indexes
    assert "facts_preferences_hnsw" in indexes
    shared = {f"{table}_embedding_hnsw" for table in TABLES}
    assert not shared & indexes, indexes
    assert not any(exact_sort(key) for key in sorts), sorts


def test_the_exact_way_returns_exactly_the_nearest_rows(seeded: Elephant) -> None:
    values = params(seeded, SMALL, "w3x w9x", "exact")
    values.update(windows=10, facts=10, passage_share=0.0, keyword_memories=0,
                  keyword_facts=0, graph=0, preferences=0, fact_support=0.0,
                  recency_weight=0.0, activation_weight=0.0, date_weight=0.0,
                  result_limit=20)  # fmt: skip
    vector = values["vectors"][0]
    with seeded.db.tenant(SMALL) as conn:
        register_vector(conn)
        prepare(conn, seeded, 10)
        rows = run_statement(conn, engine(seeded), values)
        truth_memories = conn.execute(
            "SELECT id FROM memories WHERE tenant_id = %s AND embedding IS NOT NULL "
            "ORDER BY (embedding <=> %s) + 0, id LIMIT 10",
            (SMALL, vector),
        ).fetchall()
        truth_facts = conn.execute(
            "SELECT id FROM facts WHERE tenant_id = %s AND embedding IS NOT NULL "
            "AND status = 'active' AND expired_at IS NULL "
            "ORDER BY (embedding <=> %s) + 0, id LIMIT 10",
            (SMALL, vector),
        ).fetchall()
    windows = sorted(
        (row for row in rows if rank(row, "windows")), key=lambda r: rank(r, "windows")
    )
    facts = sorted((row for row in rows if rank(row, "facts")), key=lambda r: rank(r, "facts"))
    assert [row.id for row in windows] == [row[0] for row in truth_memories]
    assert [row.id for row in facts] == [row[0] for row in truth_facts]


def rank(row: Any, lane: str) -> int:
    """The row's rank in ``lane`` (0: not found there): the statement's ranks array is in
    registry order."""
    return int(row.ranks[LANE_NAMES.index(lane)] or 0)


@pytest.mark.parametrize("tenant", [SMALL, BIG])
def test_search_reports_the_way_and_returns_only_the_tenants_rows(
    seeded: Elephant, tenant: str
) -> None:
    result = search(seeded, tenant, SearchRequest(query="w40x w41x story", explain=True))
    assert result.hits
    assert result.explain is not None
    assert result.explain.vector_way == ("own" if tenant == BIG else "exact")
    ids = [uuid.UUID(hit.id) for hit in result.hits]
    with seeded.db.admin_connection() as conn:
        owners = conn.execute(
            "SELECT DISTINCT tenant_id FROM (SELECT id, tenant_id FROM memories UNION ALL "
            "SELECT id, tenant_id FROM facts) AS x WHERE id = ANY(%s)",
            (ids,),
        ).fetchall()
    assert owners == [(tenant,)]


def test_writes_go_on_while_a_tenant_is_promoted_and_land_in_its_index(
    seeded: Elephant,
) -> None:
    """A tenant crossing the threshold gets its indexes with CREATE INDEX CONCURRENTLY:
    inserts keep committing during the build, and each is then found through the new
    index by its own vector."""
    tenant = "ways-growing"
    seed_tenant(seeded, tenant, THRESHOLD + 50, random.Random(4))
    dim = seeded.settings.embedding.dim
    written: list[tuple[uuid.UUID, list[float]]] = []
    stop = threading.Event()
    failures: list[BaseException] = []

    def writer() -> None:
        rng = random.Random(5)
        n = 0
        while not stop.is_set():
            vector = unit_vector(rng, dim)
            try:
                with seeded.db.tenant(tenant) as conn:
                    register_vector(conn)
                    row = conn.execute(
                        "INSERT INTO memories (tenant_id, kind, text, embedding, source, "
                        "content_hash) VALUES (%s, 'note', %s, %s, 'api', %s) RETURNING id",
                        (tenant, f"during the build {n}", np.array(vector, dtype=np.float32),
                         f"build-{n}"),
                    ).fetchone()  # fmt: skip
                assert row is not None
                written.append((row[0], vector))
            except BaseException as exc:  # noqa: BLE001 - reported below
                failures.append(exc)
                return
            n += 1

    thread = threading.Thread(target=writer)
    thread.start()
    time.sleep(0.3)
    before = len(written)
    report = keep(seeded.db.admin_connection, THRESHOLD)
    during = len(written) - before
    stop.set()
    thread.join(30)
    assert failures == []
    assert {index_name(table, tenant) for table in TABLES} <= set(report.built)
    assert during > 0, "no insert committed while the indexes were built"
    assert {w.tenant: w.way for w in report.ways}[tenant] == "own"
    # every row written during the build is the nearest to its own vector, via the index
    with seeded.db.tenant(tenant) as conn:
        register_vector(conn)
        prepare(conn, seeded, 45)
        text = (
            f"SELECT id FROM memories WHERE tenant_id = '{tenant}' AND embedding IS NOT NULL "
            "ORDER BY embedding <=> %s LIMIT 1"
        )
        plan = "\n".join(
            r[0] for r in conn.execute("EXPLAIN " + text, (np.zeros(dim, np.float32),)).fetchall()
        )
        assert index_name("memories", tenant) in plan, plan
        for memory_id, vector in written[-20:]:
            found = conn.execute(text, (np.array(vector, dtype=np.float32),)).fetchone()
            assert found is not None and found[0] == memory_id


def test_shrunk_and_erased_tenants_lose_their_indexes_and_a_failed_build_is_redone(
    seeded: Elephant,
) -> None:
    tenant = "ways-shrinking"
    seed_tenant(seeded, tenant, THRESHOLD + 20, random.Random(6))
    assert {w.tenant: w.way for w in keep(seeded.db.admin_connection, THRESHOLD).ways}[
        tenant
    ] == "own"
    names = {index_name(table, tenant) for table in TABLES}
    # a build that failed half way leaves an invalid index: the keeper builds it again
    with seeded.db.admin_connection() as conn:
        conn.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass",
            (index_name("facts", tenant),),
        )
    report = keep(seeded.db.admin_connection, THRESHOLD)
    assert index_name("facts", tenant) in report.built
    with seeded.db.admin_connection() as conn:
        assert all(existing_indexes(conn)[name] for name in names)
    # above half the threshold it keeps them (no flapping at the threshold) ...
    with seeded.db.admin_connection() as conn:
        for table in ("passages", "facts", "memories"):
            conn.execute(
                f"DELETE FROM {table} WHERE tenant_id = %s AND ctid IN "
                f"(SELECT ctid FROM {table} WHERE tenant_id = %s LIMIT 100)",
                (tenant, tenant),
            )
    report = keep(seeded.db.admin_connection, THRESHOLD)
    assert not names & set(report.dropped)
    # ... below half it drops them and scans exactly
    with seeded.db.admin_connection() as conn:
        for table in ("passages", "facts", "memories"):
            conn.execute(f"DELETE FROM {table} WHERE tenant_id = %s", (tenant,))
    report = keep(seeded.db.admin_connection, THRESHOLD)
    assert names <= set(report.dropped)
    assert {w.tenant: w.way for w in report.ways}[tenant] == "exact"
    # an erased tenant: its row goes with it (cascade), its indexes with the next run
    gone = "ways-erased"
    seed_tenant(seeded, gone, THRESHOLD + 10, random.Random(7))
    keep(seeded.db.admin_connection, THRESHOLD)
    with seeded.db.admin_connection() as conn:
        conn.execute("DELETE FROM tenants WHERE id = %s", (gone,))
    report = keep(seeded.db.admin_connection, THRESHOLD)
    assert {index_name(table, gone) for table in TABLES} <= set(report.dropped)
    assert gone not in {w.tenant for w in report.ways}
    with seeded.db.admin_connection() as conn:
        assert not {index_name(table, gone) for table in TABLES} & set(existing_indexes(conn))


def test_one_tenant_holding_nearly_every_row_keeps_the_shared_graphs(
    pg_server: Any, new_database: Any, pg_data_dir: Any, embedder: Any
) -> None:
    """A single-tenant deployment: the shared graph is its own already; a copy would
    double the RAM and the cost of every insert."""
    own = make_settings(pg_data_dir, embedded={"database": new_database("ways_single")})
    db = Database(own)
    db.open()
    try:
        runtime = Elephant(settings=own, db=db, embedder=embedder, llm=None)
        seed_tenant(runtime, "alone", THRESHOLD + 10, random.Random(8))
        seed_tenant(runtime, "tiny", 5, random.Random(9))
        report = keep(db.admin_connection, THRESHOLD)
        assert {w.tenant: w.way for w in report.ways} == {"alone": "shared", "tiny": "exact"}
        assert report.built == []
        runtime.close_providers()
    finally:
        db.close()


def test_the_way_cache_rereads_after_its_interval_and_when_told(seeded: Elephant) -> None:
    tenant = "ways-cached"
    seed_tenant(seeded, tenant, 5, random.Random(10))
    keep(seeded.db.admin_connection, THRESHOLD)
    now = [0.0]
    cache = WayCache(30.0, clock=lambda: now[0])

    def set_way(way: str) -> None:
        with seeded.db.admin_connection() as conn:
            conn.execute(
                "UPDATE tenant_vector_ways SET way = %s WHERE tenant_id = %s", (way, tenant)
            )

    def read() -> str:
        with seeded.db.tenant(tenant) as conn:
            return cache.get(conn, tenant)

    assert read() == "exact"
    set_way("shared")
    assert read() == "exact"  # remembered
    now[0] = 31.0
    assert read() == "shared"  # read again after the interval
    set_way("exact")
    cache.forget(tenant)
    assert read() == "exact"  # read again when told (the keeper changed something)


def test_the_worker_keeper_runs_on_its_interval_and_survives_an_outage(seeded: Elephant) -> None:
    now = [0.0]
    keeper = Keeper(
        seeded.db.admin_connection,
        lambda: THRESHOLD,
        60.0,
        on_change=lambda: None,
        clock=lambda: now[0],
        first_after_s=5.0,
    )
    assert keeper.tick() is None  # not yet
    now[0] = 5.0
    report = keeper.tick()
    assert report is not None and report.counts()["own"] >= 1
    assert keeper.tick() is None  # the next one is an interval away

    @contextmanager
    def down() -> Iterator[Any]:
        raise DatabaseUnavailable("the database is down")
        yield None  # pragma: no cover

    broken = Keeper(down, lambda: THRESHOLD, 60.0, on_change=lambda: None, clock=lambda: 100.0)
    assert broken.tick() is None  # logged, not raised


def test_doctor_says_how_tenants_are_served_and_warns_of_a_failed_build(
    seeded: Elephant,
) -> None:
    keep(seeded.db.admin_connection, THRESHOLD)

    def check() -> Any:
        (found,) = [c for c in diagnose(seeded).checks if c.name == "tenant vectors"]
        return found

    healthy = check()
    assert healthy.level == "ok", healthy
    assert f"{BIG} own" in healthy.detail and "exact (< 300 rows)" in healthy.detail
    name = index_name("passages", BIG)
    with seeded.db.admin_connection() as conn:
        conn.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass", (name,)
        )
    broken = check()
    assert broken.level == "warn" and name in broken.detail
    keep(seeded.db.admin_connection, THRESHOLD)  # rebuilt
    assert check().level == "ok"


@pytest.mark.parametrize(("tenant", "way"), [(SMALL, "exact"), (BIG, "own")])
def test_the_gate_finds_a_stored_memory_as_its_nearest_neighbour_either_way(
    seeded: Elephant, tenant: str, way: Any
) -> None:
    """Novelty (the admission gate) reads nearest memories the tenant's way too."""
    with seeded.db.tenant(tenant) as conn:
        register_vector(conn)
        row = conn.execute(
            "SELECT id, embedding FROM memories WHERE tenant_id = %s AND embedding IS NOT NULL "
            "ORDER BY id LIMIT 1",
            (tenant,),
        ).fetchone()
        assert row is not None
        found = _nearest(conn, tenant, np.stack([row[1]]), 3, None, way)
    assert found[0][0][0] == str(row[0]) and found[0][0][2] > 0.999
