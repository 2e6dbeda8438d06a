"""One million memories and one million facts over 100 tenants and one big tenant.

    .venv/bin/python benchmarks/scale.py --million [--queries 100]
        [--out benchmarks/results/million.json]
    .venv/bin/python benchmarks/million.py [--memories 1000000] [--queries 100] [--smoke]

The corpus is scale.py's (same generator, same shapes: texts from a Zipf vocabulary,
clustered 384-d vectors, 2 passages per memory, 1 fact in 200 a preference), spread
over tenants: half the memories belong to one big tenant, the other half to 100 small
ones (about 5,000 each); every fact and passage belongs to its memory's tenant.
Loaded by scale.bulk_load (binary COPY with the big indexes dropped, each rebuilt and
timed), plus a pgvectorscale DiskANN index on memories.embedding.

Searched with the product's statement (prepared, generic plan, as search() runs it),
as the app role under row-level security, for the big tenant and for small ones
(queries spread over 20 of them), three ways:

- ``hnsw_iterative``: the product (HNSW with pgvector's iterative scan, strict order);
- ``hnsw_plain``: HNSW without iterative scans (hnsw.iterative_scan = off): a small
  tenant's rows are 0.5 % of the index, so a lane can come back short;
- ``diskann``: the memories HNSW index dropped inside the transaction (rolled back
  after), so the windows-dense lane walks the DiskANN index (streaming, it keeps
  reading until its LIMIT is filled); the other lanes as the product.

Per way and tenant class: statement p50/p95 (execute + fetch), and recall@10 of the
windows-dense lane alone against an exact scan (the lane's own query, as the
tenant), with how many rows it returned. Also: load and index-build times, table and
index sizes, the maintenance_work_mem each build was given, and the disk a million
memories take (tables + indexes). Targets printed beside: p50 <= 25 ms at 1M.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import scale
from pgvector.psycopg import register_vector
from psycopg import sql

from app.config import Settings
from app.db.runtime import Connection, Database
from app.services.search import prepare, run_statement

BIG = "big"
SMALL = [f"small-{n:02d}" for n in range(100)]
SMALL_QUERIED = 20
BIG_SHARE = 0.5
LANE_LIMIT = 45
TARGET_P50_MS = 25.0
WAYS = ("hnsw_iterative", "hnsw_plain", "diskann")
DISKANN_INDEX = "memories_embedding_diskann"
SMOKE_MEMORIES, SMOKE_QUERIES = 3_000, 6
WARMUP = 10

RECALL_K = 10
TIE = 1e-4  # synthetic clusters: beyond a topic's few rows, distances nearly tie
LANE_QUERY = (
    "SELECT id, embedding <=> %(vector)s FROM memories WHERE embedding IS NOT NULL "
    "ORDER BY embedding <=> %(vector)s LIMIT %(limit)s"
)


def tenants_for(size: int, rng: np.random.Generator) -> list[str]:
    big = int(size * BIG_SHARE)
    small = rng.integers(0, len(SMALL), size=size - big)
    owners = [BIG] * big + [SMALL[i] for i in small.tolist()]
    order = rng.permutation(size)  # interleaved on disk, as real arrivals would be
    return [owners[i] for i in order.tolist()]


def build_diskann(db: Database, memories: int) -> dict[str, float]:
    with db.admin_connection() as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vectorscale CASCADE")
        work_mem_mb = max(1024, memories * 3 // 1024)
        conn.execute(f"SET maintenance_work_mem = '{work_mem_mb}MB'")
        started = time.perf_counter()
        conn.execute(
            sql.SQL(
                "CREATE INDEX {} ON memories USING diskann (embedding vector_cosine_ops)"
            ).format(sql.Identifier(DISKANN_INDEX))
        )
        seconds = time.perf_counter() - started
        row = conn.execute("SELECT pg_relation_size(%s::regclass)", (DISKANN_INDEX,)).fetchone()
        conn.execute("ANALYZE memories")
    assert row is not None
    return {"build_s": round(seconds, 2), "mb": round(int(row[0]) / 2**20, 1)}


@contextmanager
def as_tenant(db: Database, way: str) -> Iterator[Connection]:
    """One admin connection acting as the app role (row-level security applies), in one
    transaction that is rolled back: for diskann the HNSW index is dropped inside it."""
    with db.admin_connection() as conn:
        register_vector(conn)
        conn.execute("BEGIN")
        try:
            if way == "diskann":
                conn.execute("DROP INDEX memories_embedding_hnsw")
            conn.execute(
                sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(db.settings.database.app_role))
            )
            yield conn
        finally:
            conn.execute("ROLLBACK")


def search_once(
    conn: Connection, app: Any, tenant: str, way: str, params: dict[str, Any]
) -> tuple[float, int]:
    conn.execute("SELECT set_config('elephant.tenant_id', %s, true)", (tenant,))
    prepare(conn, app, max(params["windows"], params["facts"]))
    if way == "hnsw_plain":
        conn.execute("SELECT set_config('hnsw.iterative_scan', 'off', true)")
    started = time.perf_counter()
    rows = run_statement(conn, "bm25", params)
    return (time.perf_counter() - started) * 1000, len(rows)


def lane_rows(conn: Connection, tenant: str, vector: Any, exact: bool) -> list[float]:
    """The windows-dense lane's distances (its own query, as the tenant): exact, or as
    the index answers it."""
    conn.execute("SELECT set_config('elephant.tenant_id', %s, true)", (tenant,))
    if exact:
        conn.execute("SELECT set_config('enable_indexscan', 'off', true)")
    rows = conn.execute(LANE_QUERY, {"vector": vector, "limit": LANE_LIMIT}).fetchall()
    if exact:
        conn.execute("SELECT set_config('enable_indexscan', 'on', true)")
    return [float(row[1]) for row in rows]


def recall(found: list[float], truth: list[float]) -> float:
    """Recall@10 that counts a tie as a hit: a found row no farther than the exact 10th
    (random clusters make most distances beyond a topic's own rows nearly equal)."""
    k = min(RECALL_K, len(truth))
    if k == 0:
        return 1.0
    bound = truth[k - 1] + TIE
    return sum(d <= bound for d in found[:k]) / k


def measure(
    db: Database, app: Any, queries: list[scale.Query], recall_queries: int
) -> dict[str, Any]:
    """Timed searches first, then the lane's rows per way, then the exact scans: an exact
    scan reads whole tables, which would push the indexes out of the page cache."""
    classes = {
        "big": [BIG] * len(queries),
        "small": [SMALL[i % SMALL_QUERIED] for i in range(len(queries))],
    }
    with db.admin_connection() as conn:
        row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (DISKANN_INDEX,)).fetchone()
    ways = [w for w in WAYS if w != "diskann" or (row is not None and row[0])]
    timed: dict[tuple[str, str], tuple[list[float], list[int]]] = {}
    found: dict[tuple[str, str, int], list[float]] = {}
    for way in ways:
        with as_tenant(db, way) as conn:
            for name, tenants in classes.items():
                for n, query in enumerate(queries[:WARMUP]):
                    search_once(conn, app, tenants[n], way, scale.params_for(app, query))
                times, counts = [], []
                for n, query in enumerate(queries):
                    ms, count = search_once(
                        conn, app, tenants[n], way, scale.params_for(app, query)
                    )
                    times.append(ms)
                    counts.append(count)
                timed[way, name] = (times, counts)
                iterative = "off" if way == "hnsw_plain" else "strict_order"
                conn.execute("SELECT set_config('hnsw.iterative_scan', %s, true)", (iterative,))
                for n in range(recall_queries):
                    vector = queries[n].vectors[0]
                    found[way, name, n] = lane_rows(conn, tenants[n], vector, exact=False)
    exact: dict[tuple[str, int], list[float]] = {}
    with as_tenant(db, "exact") as conn:
        for name, tenants in classes.items():
            for n in range(recall_queries):
                exact[name, n] = lane_rows(conn, tenants[n], queries[n].vectors[0], exact=True)
    out: dict[str, Any] = {}
    for way in ways:
        out[way] = {}
        for name in classes:
            times, counts = timed[way, name]
            rows = [found[way, name, n] for n in range(recall_queries)]
            measured: dict[str, Any] = {
                "sql_ms": scale.percentiles(times),
                "hits_mean": round(float(np.mean(counts)), 2),
                "windows_lane_recall_at_10": round(
                    float(np.mean([recall(r, exact[name, n]) for n, r in enumerate(rows)])), 3
                ),
                "windows_lane_rows_mean": round(float(np.mean([len(r) for r in rows])), 2),
            }
            out[way][name] = measured
            print(
                f"  {way:15s} {name:5s} p50 {measured['sql_ms']['p50']:7.2f} ms"
                f"  p95 {measured['sql_ms']['p95']:7.2f} ms"
                f"  recall@10 {measured['windows_lane_recall_at_10']:.3f}"
                f"  rows {measured['windows_lane_rows_mean']:.1f}",
                flush=True,
            )
    return out


@contextmanager
def database(data_dir: Path | None) -> Iterator[Database]:
    """A temporary database, or one kept in data_dir (loaded once, measured many times)."""
    if data_dir is None:
        with scale.fresh_database("elephant-million-") as db:
            yield db
        return
    settings = Settings.model_validate({"data_dir": str(data_dir), "log": {"level": "WARNING"}})
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
    with_diskann: bool = True,
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
    with database(data_dir) as db:
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
        results = measure(db, app, queries, recall_queries)
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
        "loadavg_1m": round(os.getloadavg()[0], 2),
        "ways": results,
        "target_p50_ms": TARGET_P50_MS,
    }


def print_summary(result: dict[str, Any]) -> None:
    load = result["load"]
    print(
        f"\n{result['memories']:,} memories, {result['facts']:,} facts, "
        f"{result['passages']:,} passages; COPY {load['copy_s']} s, index builds "
        f"{load['index_build_total_s']} s, DiskANN {load['diskann']}; disk {result['disk_gb']}"
    )
    header = f"{'way':16s}{'tenant':8s}{'p50 ms':>9s}{'p95 ms':>9s}{'recall@10':>11s}"
    print(f"{header}  target p50 <= {TARGET_P50_MS:g} ms")
    for way, classes in result["ways"].items():
        for name, row in classes.items():
            print(
                f"{way:16s}{name:8s}{row['sql_ms']['p50']:9.2f}{row['sql_ms']['p95']:9.2f}"
                f"{row['windows_lane_recall_at_10']:11.3f}"
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=1_000_000)
    parser.add_argument(
        "--queries", type=int, default=100, help="Timed searches per way and tenant class."
    )
    parser.add_argument("--recall-queries", type=int, default=20)
    parser.add_argument(
        "--no-diskann", action="store_true", help="Skip the DiskANN build (and that way)."
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
    if args.smoke:
        size, queries, recall = SMOKE_MEMORIES, SMOKE_QUERIES, 3
    result = run(size, queries, args.seed, recall, args.data_dir, not args.no_diskann)
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
