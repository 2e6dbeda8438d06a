"""One million memories and one million facts over 100 tenants and one big tenant.

    .venv/bin/python benchmarks/scale.py --million [--queries 100]
        [--out benchmarks/results/million.json]
    .venv/bin/python benchmarks/million.py [--memories 1000000] [--queries 100] [--smoke]
        [--diskann] [--tenant-index-rows N] [--data-dir DIR]

The corpus is scale.py's (same generator, same shapes: texts from a Zipf vocabulary,
clustered 384-d vectors, 2 passages per memory, 1 fact in 200 a preference), spread
over tenants: half the memories belong to one big tenant, the other half to 100 small
ones (about 5,000 each); every fact and passage belongs to its memory's tenant.
Loaded by scale.bulk_load (binary COPY with the big indexes dropped, each rebuilt and
timed), plus a pgvectorscale DiskANN index on memories.embedding.

Searched with the product's statement (prepared, generic plan, as search() runs it),
as the app role under row-level security, for the big tenant and for small ones
(queries spread over 20 of them), two ways, interleaved query by query (the order
alternating) in one run:

- ``product``: as shipped. After the load the keeper (app/db/tenant_indexes.py, the
  worker's job) counts the tenants: a tenant below search.tenant_index_rows (20,000)
  is searched exactly through its tenant_id index; the big one gets HNSW indexes of
  its own, built online while a writer keeps inserting (its latency measured before
  and during the build).
- ``today``: every tenant through the HNSW graphs all tenants share, with pgvector's
  iterative scan (the product before issue 27).
- ``diskann`` (``--diskann``): a pgvectorscale DiskANN index on memories.embedding;
  the memories HNSW index dropped inside the transaction (rolled back after), so the
  windows lane walks DiskANN; the other lanes as ``today``.

Per way and tenant class: statement p50/p95 (execute + fetch), and recall@k of each
vector lane (windows = memories, passages, facts, preferences) against an exact scan
of the tenant's rows, ties counted, the lane run as the statement runs it in that way.
Also: load and index-build times, table and index sizes, the maintenance_work_mem each
build was given, the disk a million memories take, and the load average. Targets
printed beside: p50 <= 20 ms and p95 <= 50 ms, recall >= 0.95, both classes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import scale
from pgvector.psycopg import register_vector
from psycopg import sql

from app.config import Settings
from app.db.runtime import Connection, Database
from app.db.tenant_indexes import Way, keep
from app.db.tenant_indexes import ways as recorded_ways
from app.services.retrieval.search import prepare, run_statement

BIG = "big"
SMALL = [f"small-{n:02d}" for n in range(100)]
SMALL_QUERIED = 20
BIG_SHARE = 0.5
WAYS = ("product", "today")
DISKANN_INDEX = "memories_embedding_diskann"
SMOKE_MEMORIES, SMOKE_QUERIES = 3_000, 6
WARMUP = 10
TARGET_P50_MS, TARGET_P95_MS, TARGET_RECALL = 20.0, 50.0, 0.95

RECALL_K = 10
TIE = 1e-4  # synthetic clusters: beyond a topic's few rows, distances nearly tie


@dataclass(frozen=True)
class VectorLane:
    """One dense lane of the statement as its own query: its table, the condition it
    adds, and its size in the product's settings."""

    table: str
    condition: str
    size_key: str


LANES = {
    "windows": VectorLane("memories", "", "windows"),
    "passages": VectorLane("passages", "", "passage_candidates"),
    "facts": VectorLane("facts", "AND x.status = 'active' AND x.expired_at IS NULL", "facts"),
    "preferences": VectorLane("facts", "AND x.fact_type = 'preference'", "preferences"),
}


def lane_query(lane: VectorLane, way: Way, tenant: str) -> str:
    """The lane as the statement runs it in ``way``: exact (`+ 0` keeps HNSW out), or an
    HNSW walk with the tenant a literal (own: the planner proves the partial index) or a
    parameter (shared graphs)."""
    target = f"'{tenant}'" if way == "own" else "%(tenant)s"
    order = "(x.embedding <=> %(vector)s) + 0" if way == "exact" else "x.embedding <=> %(vector)s"
    return (
        f"SELECT x.embedding <=> %(vector)s FROM {lane.table} AS x "  # noqa: S608 (table and condition: this file's own lane constants; the tenant a validated id)
        f"WHERE x.tenant_id = {target} AND x.embedding IS NOT NULL {lane.condition} "
        f"ORDER BY {order} LIMIT %(limit)s"
    )


def tenants_for(size: int, rng: np.random.Generator) -> list[str]:
    big = int(size * BIG_SHARE)
    small = rng.integers(0, len(SMALL), size=size - big)
    owners = [BIG] * big + [SMALL[i] for i in small.tolist()]
    order = rng.permutation(size)  # interleaved on disk, as real arrivals would be
    return [owners[i] for i in order.tolist()]


def build_diskann(db: Database, memories: int) -> dict[str, Any]:
    """pgvectorscale's DiskANN on memories.embedding, with the options that bound its
    build on this hardware: a parallel-free build given maintenance_work_mem, fewer
    neighbours than the default 50 (num_neighbors) and a shorter search list."""
    with db.admin_connection() as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vectorscale CASCADE")
        work_mem_mb = max(1024, memories * 3 // 1024)
        conn.execute(f"SET maintenance_work_mem = '{work_mem_mb}MB'")
        started = time.perf_counter()
        conn.execute(
            sql.SQL(
                "CREATE INDEX {} ON memories USING diskann (embedding vector_cosine_ops) "
                "WITH (num_neighbors = 32, search_list_size = 64)"
            ).format(sql.Identifier(DISKANN_INDEX))
        )
        seconds = time.perf_counter() - started
        row = conn.execute("SELECT pg_relation_size(%s::regclass)", (DISKANN_INDEX,)).fetchone()
        conn.execute("ANALYZE memories")
    assert row is not None
    return {
        "build_s": round(seconds, 2),
        "mb": round(int(row[0]) / 2**20, 1),
        "options": "num_neighbors 32, search_list_size 64",
    }


@contextmanager
def as_tenant(db: Database, diskann: bool = False) -> Iterator[Connection]:
    """One admin connection acting as the app role (row-level security applies), in one
    transaction that is rolled back: for diskann the HNSW index is dropped inside it."""
    with db.admin_connection() as conn:
        register_vector(conn)
        conn.execute("BEGIN")
        try:
            if diskann:
                conn.execute("DROP INDEX memories_embedding_hnsw")
            conn.execute(
                sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(db.settings.database.app_role))
            )
            yield conn
        finally:
            conn.execute("ROLLBACK")


def way_for(name: str, tenant: str, product: dict[str, Way]) -> Way:
    return product.get(tenant, "exact") if name == "product" else "shared"


def search_once(
    conn: Connection, app: Any, tenant: str, way: Way, params: dict[str, Any]
) -> tuple[float, int]:
    conn.execute("SELECT set_config('elephant.tenant_id', %s, true)", (tenant,))
    prepare(conn, app, max(params["windows"], params["facts"]), way)
    params = {**params, "tenant": tenant, "exact": way == "exact", "way": way}
    started = time.perf_counter()
    rows = run_statement(conn, "bm25", params)
    return (time.perf_counter() - started) * 1000, len(rows)


def lane_distances(
    conn: Connection, app: Any, lane: VectorLane, tenant: str, vector: Any, way: Way, limit: int
) -> list[float]:
    """The lane's distances, as the tenant, in ``way`` (exact: the truth)."""
    conn.execute("SELECT set_config('elephant.tenant_id', %s, true)", (tenant,))
    prepare(conn, app, limit)
    rows = conn.execute(
        cast(Any, lane_query(lane, way, tenant)),
        {"vector": vector, "limit": limit, "tenant": tenant},
    ).fetchall()
    return [float(row[0]) for row in rows]


def recall(found: list[float], truth: list[float], k: int) -> float:
    """Recall@k that counts a tie as a hit: a found row no farther than the exact k-th
    (random clusters make most distances beyond a topic's own rows nearly equal)."""
    k = min(k, len(truth))
    if k == 0:
        return 1.0
    bound = truth[k - 1] + TIE
    return sum(d <= bound for d in found[:k]) / k


def measure(
    db: Database,
    app: Any,
    queries: list[scale.Query],
    recall_queries: int,
    product: dict[str, Way],
    with_diskann: bool,
) -> dict[str, Any]:
    """Timed searches first (the ways interleaved query by query, the order alternating),
    then each lane's rows per way, then the exact scans (which read whole tenants)."""
    classes = {
        "big": [BIG] * len(queries),
        "small": [SMALL[i % SMALL_QUERIED] for i in range(len(queries))],
    }
    ways = list(WAYS)
    timed: dict[tuple[str, str], tuple[list[float], list[int]]] = {
        (way, name): ([], []) for way in ways for name in classes
    }
    with as_tenant(db) as conn:
        for name, tenants in classes.items():
            for n, query in enumerate(queries[:WARMUP]):
                for way in ways:
                    way_of = way_for(way, tenants[n], product)
                    search_once(conn, app, tenants[n], way_of, scale.params_for(app, query))
            for n, query in enumerate(queries):
                order = ways if n % 2 == 0 else ways[::-1]
                for way in order:
                    way_of = way_for(way, tenants[n], product)
                    ms, count = search_once(
                        conn, app, tenants[n], way_of, scale.params_for(app, query)
                    )
                    timed[way, name][0].append(ms)
                    timed[way, name][1].append(count)
    if with_diskann:
        ways.append("diskann")
        with as_tenant(db, diskann=True) as conn:
            for name, tenants in classes.items():
                times, counts = timed.setdefault(("diskann", name), ([], []))
                for n, query in enumerate(queries):
                    params = scale.params_for(app, query)
                    ms, count = search_once(conn, app, tenants[n], "shared", params)
                    times.append(ms)
                    counts.append(count)
    settings = app.settings.search
    sizes = {
        "windows": settings.windows,
        "passages": min(settings.passage_candidates, settings.windows),
        "facts": settings.facts,
        "preferences": settings.preferences,
    }
    recalls: dict[tuple[str, str, str], list[float]] = {}
    rows_found: dict[tuple[str, str, str], list[int]] = {}
    truths: dict[tuple[str, str, int], list[float]] = {}
    with as_tenant(db) as conn:
        for name, tenants in classes.items():
            for lane_name, lane in LANES.items():
                for n in range(recall_queries):
                    vector = queries[n].vectors[0]
                    truths[name, lane_name, n] = lane_distances(
                        conn, app, lane, tenants[n], vector, "exact", sizes[lane_name]
                    )
            for way in WAYS:
                for lane_name, lane in LANES.items():
                    for n in range(recall_queries):
                        way_of = way_for(way, tenants[n], product)
                        found = lane_distances(
                            conn, app, lane, tenants[n], queries[n].vectors[0], way_of,
                            sizes[lane_name],
                        )  # fmt: skip
                        truth = truths[name, lane_name, n]
                        k = min(RECALL_K, sizes[lane_name])
                        recalls.setdefault((way, name, lane_name), []).append(
                            recall(found, truth, k)
                        )
                        rows_found.setdefault((way, name, lane_name), []).append(len(found))
    out: dict[str, Any] = {}
    for way in ways:
        out[way] = {}
        for name in classes:
            times, counts = timed[way, name]
            measured: dict[str, Any] = {
                "sql_ms": scale.percentiles(times),
                "hits_mean": round(float(np.mean(counts)), 2),
            }
            if way in WAYS:
                measured["recall_at_10"] = {
                    lane: round(float(np.mean(recalls[way, name, lane])), 3) for lane in LANES
                }
                measured["lane_rows_mean"] = {
                    lane: round(float(np.mean(rows_found[way, name, lane])), 2) for lane in LANES
                }
                measured["served_as"] = way_for(way, classes[name][0], product)
            out[way][name] = measured
            worst = min(measured.get("recall_at_10", {"-": float("nan")}).values())
            print(
                f"  {way:8s} {name:5s} p50 {measured['sql_ms']['p50']:7.2f} ms"
                f"  p95 {measured['sql_ms']['p95']:7.2f} ms  lowest lane recall {worst:.3f}",
                flush=True,
            )
    return out


def promote(db: Database, writes_s: float = 5.0) -> dict[str, Any]:
    """The keeper as the worker runs it, with a writer inserting into the big tenant
    before and during the builds: writes go on (CREATE INDEX CONCURRENTLY), measured."""
    rng = np.random.default_rng(1)
    dim = db.settings.embedding.dim
    latencies: dict[str, list[float]] = {"before": [], "during": []}
    phase = ["before"]
    stop = threading.Event()
    errors: list[str] = []

    def writer() -> None:
        n = 0
        while not stop.is_set():
            vector = rng.standard_normal(dim).astype(np.float32)
            vector /= np.linalg.norm(vector)
            started = time.perf_counter()
            try:
                with db.tenant(BIG) as conn:
                    register_vector(conn)
                    conn.execute(
                        "INSERT INTO memories (tenant_id, kind, text, embedding, source, "
                        "content_hash) VALUES (%s, 'note', %s, %s, 'api', %s)",
                        (
                            BIG,
                            f"written during promotion {n}",
                            vector,
                            f"promotion-{n}-{time.time_ns()}",
                        ),
                    )
            except Exception as exc:  # noqa: BLE001 - counted, reported
                errors.append(str(exc))
            latencies[phase[0]].append((time.perf_counter() - started) * 1000)
            n += 1

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    time.sleep(writes_s)
    phase[0] = "during"
    started = time.perf_counter()
    report = keep(db.admin_connection, db.settings.search.tenant_index_rows)
    seconds = time.perf_counter() - started
    stop.set()
    thread.join(10)
    return {
        "keeper_s": round(seconds, 1),
        "built": report.built,
        "ways": report.counts(),
        "writes_before": {
            "count": len(latencies["before"]),
            **scale.percentiles(latencies["before"]),
        },
        "writes_during": {
            "count": len(latencies["during"]),
            "per_s": round(len(latencies["during"]) / max(seconds, 1e-9), 1),
            **scale.percentiles(latencies["during"]),
        },
        "write_errors": len(errors),
        "first_error": errors[0] if errors else None,
    }


@contextmanager
def database(data_dir: Path | None, threshold: int | None) -> Iterator[Database]:
    """A temporary database, or one kept in data_dir (loaded once, measured many times);
    ``threshold``: search.tenant_index_rows, if not the product's."""
    overrides = {} if threshold is None else {"search": {"tenant_index_rows": threshold}}
    if data_dir is None:
        with scale.fresh_database("elephant-million-", overrides) as db:
            yield db
        return
    settings = Settings.model_validate(
        {"data_dir": str(data_dir), "log": {"level": "WARNING"}, **overrides}
    )
    with Database(settings) as db:
        yield db


def loaded(saved: dict[str, Any]) -> tuple[scale.LoadReport, dict[str, float]]:
    return scale.LoadReport(**saved["load"]), saved["diskann"]


def run(
    size: int,
    query_count: int,
    seed: int,
    recall_queries: int,
    data_dir: Path | None = None,
    with_diskann: bool = False,
    threshold: int | None = None,
) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    vocab = scale.make_vocabulary(rng)
    corpus = scale.make_corpus(rng, vocab, size, facts=size)
    corpus.memory_tenants = tenants_for(size, rng)
    queries = scale.make_queries(rng, vocab, corpus, query_count)
    generate_s = time.perf_counter() - started
    print(
        f"[{size}] generated {size} memories and facts over 101 tenants in {generate_s:.0f}s",
        flush=True,
    )
    with database(data_dir, threshold) as db:
        marker = None if data_dir is None else data_dir / f"loaded-{size}-{seed}.json"
        if marker is not None and marker.exists():  # a kept load: measure again only
            load, diskann = loaded(json.loads(marker.read_text()))
        else:
            load = scale.bulk_load(db, corpus)
            print(f"[{size}] COPY {load.copy_s:.0f}s; builds {load.index_s}", flush=True)
            diskann = build_diskann(db, size) if with_diskann else {"built": False}
            print(f"[{size}] DiskANN {diskann}", flush=True)
            if marker is not None:
                marker.write_text(json.dumps({"load": load.__dict__, "diskann": diskann}))
        promotion = promote(db, writes_s=1.0 if size <= SMOKE_MEMORIES else 5.0)
        print(f"[{size}] keeper (own indexes for big tenants) {promotion}", flush=True)
        with db.admin_connection() as conn:
            product: dict[str, Way] = {w.tenant: w.way for w in recorded_ways(conn)}
            hnsw_mb = dict(conn.execute(
                "SELECT CASE WHEN c.relname ~ '_embedding_t_' THEN 'own' ELSE 'shared' END, "
                "round(sum(pg_relation_size(c.oid)) / 1048576.0) FROM pg_class AS c "
                "JOIN pg_am AS am ON am.oid = c.relam WHERE am.amname = 'hnsw' GROUP BY 1"
            ).fetchall())  # fmt: skip
        with db.admin_connection() as conn:
            row = conn.execute(
                "SELECT sum(pg_table_size(c)), sum(pg_indexes_size(c)) FROM unnest("
                "ARRAY['memories','facts','passages']::regclass[]) AS c"
            ).fetchone()
            settings = dict(conn.execute(
                "SELECT name, setting || coalesce(unit, '') FROM pg_settings "
                "WHERE name IN ('shared_buffers', 'work_mem', 'effective_cache_size')"
            ).fetchall())  # fmt: skip
        assert row is not None
        app = scale.service(db)
        load_before = os.getloadavg()
        results = measure(db, app, queries, recall_queries, product, with_diskann)
    tables_gb, indexes_gb = int(row[0]) / 2**30, int(row[1]) / 2**30
    per_million = 1_000_000 / size
    return {
        "memories": size,
        "facts": len(corpus.fact_ids),
        "passages": corpus.passage_count,
        "tenants": {"big": BIG_SHARE, "small": len(SMALL), "small_queried": SMALL_QUERIED},
        "queries": query_count,
        "generate_s": round(generate_s, 1),
        "load": {
            "copy_s": round(load.copy_s, 1),
            "copy_table_s": {k: round(v, 1) for k, v in load.copy_table_s.items()},
            "index_build_s": {k: round(v, 1) for k, v in load.index_s.items()},
            "index_build_total_s": round(sum(load.index_s.values()), 1),
            "maintenance_work_mem_mb": {
                "memories/facts": max(1024, size * 3 // 1024),
                "passages": max(1024, corpus.passage_count * 3 // 1024),
            },
            "table_mb": load.table_mb,
            "index_mb": load.index_mb,
            "diskann": diskann,
        },
        "disk_gb": {
            "tables": round(tables_gb, 2),
            "indexes_with_diskann": round(indexes_gb, 2),
            "per_million_memories": round((tables_gb + indexes_gb) * per_million, 2),
        },
        "server_settings": settings,
        "promotion": promotion,
        "served": {
            way: sum(1 for w in product.values() if w == way) for way in ("exact", "own", "shared")
        },
        "hnsw_index_mb": {k: float(v) for k, v in hnsw_mb.items()},
        "loadavg": {
            "before": [round(x, 2) for x in load_before],
            "after": [round(x, 2) for x in os.getloadavg()],
        },
        "ways": results,
        "targets": {
            "p50_ms": TARGET_P50_MS,
            "p95_ms": TARGET_P95_MS,
            "recall_at_10": TARGET_RECALL,
        },
    }


def print_summary(result: dict[str, Any]) -> None:
    load = result["load"]
    print(
        f"\n{result['memories']:,} memories, {result['facts']:,} facts, "
        f"{result['passages']:,} passages; COPY {load['copy_s']} s, index builds "
        f"{load['index_build_total_s']} s, DiskANN {load['diskann']}; disk {result['disk_gb']}; "
        f"keeper {result['promotion']['keeper_s']} s; served {result['served']}; "
        f"load average {result['loadavg']}"
    )
    lanes = list(LANES)
    header = f"{'way':9s}{'tenant':7s}{'served':8s}{'p50 ms':>8s}{'p95 ms':>8s}" + "".join(
        f"{lane:>12s}" for lane in lanes
    )
    print(
        f"{header}\n  targets: p50 <= {TARGET_P50_MS:g} ms, p95 <= {TARGET_P95_MS:g} ms, "
        f"recall@10 >= {TARGET_RECALL:g} for every lane and both classes"
    )
    for way, classes in result["ways"].items():
        for name, row in classes.items():
            recalls = row.get("recall_at_10", {})
            print(
                f"{way:9s}{name:7s}{row.get('served_as', '-'):8s}"
                f"{row['sql_ms']['p50']:8.2f}{row['sql_ms']['p95']:8.2f}"
                + "".join(f"{recalls.get(lane, float('nan')):12.3f}" for lane in lanes)
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=1_000_000)
    parser.add_argument(
        "--queries", type=int, default=100, help="Timed searches per way and tenant class."
    )
    parser.add_argument("--recall-queries", type=int, default=20)
    parser.add_argument(
        "--diskann", action="store_true", help="Also build DiskANN (pgvectorscale) and time it."
    )
    parser.add_argument(
        "--tenant-index-rows",
        type=int,
        default=None,
        help="search.tenant_index_rows (default: the product's; --smoke: 1,000, so that its "
        "big tenant of 1,500 gets its own indexes)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--smoke", action="store_true", help="3,000 memories, 6 queries: seconds")
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="Keep the loaded database here; a second run with the same size and seed "
        "measures again without loading (default: a temporary one, removed after)",
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/million.json"))
    args = parser.parse_args(argv)
    size, queries, recall = args.memories, args.queries, args.recall_queries
    threshold = args.tenant_index_rows
    if args.smoke:
        size, queries, recall = SMOKE_MEMORIES, SMOKE_QUERIES, 3
        threshold = 1_000 if threshold is None else threshold
    result = run(size, queries, args.seed, recall, args.data_dir, args.diskann, threshold)
    print_summary(result)
    body = {
        "benchmark": "million",
        "smoke": args.smoke,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "result": result,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(body, indent=2, default=str))
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
