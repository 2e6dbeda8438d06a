"""The BM25 lane ranked by the tenant's own statistics vs the index's shared ones: speed.

    .venv/bin/python benchmarks/keyword_tenant_stats.py [--big 30000] [--small 1000]
        [--queries 200] [--pool 50] [--smoke] [--out benchmarks/results/keyword_tenant_stats.json]

Issue 40: a bm25 index's statistics span every tenant, so a tenant's keyword order told
it which words other tenants use. search.keyword_statistics = tenant (the default)
rescores the index's best search.keyword_pool candidates with the tenant's own BM25
(sql/retrieval/keyword_bm25_tenant.sql); table is the ranking before (keyword_bm25.sql).

A small tenant beside a big one, scale.py's synthetic corpus (Zipf vocabulary, topic
words, names; clustered vectors; passages; facts), bulk loaded by scale.bulk_load. For
each tenant, the product's statement (prepared, as search() runs it, the app role under
row-level security) with the keyword lane alone and with every lane (fused), each query
under both statistics, interleaved query by query (the order alternating). Printed and
written: SQL p50/p95 per tenant, lane set and statistics, the load average before and
after, and for the small tenant how many queries' words are in more of its documents
than the pool holds (only for those may which documents are rescored follow the shared
statistics; docs/search.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import scale
from psycopg import sql

from app.services.retrieval.search import prepare, run_statement, statement

BIG, SMALL = "kw-big", "kw-small"
STATISTICS = ("tenant", "table")
KEYWORD_ONLY = {"windows": 0, "facts": 0, "graph": 0, "preferences": 0, "passage_candidates": 0}


def lane_params(app: Any, query: scale.Query, tenant: str, lanes: str, stats: str) -> Any:
    # the big tenant on the shared graphs (no own indexes are built here), the small exact
    params = scale.params_for(
        app, query, tenant=tenant, way="exact" if tenant == SMALL else "shared"
    )
    if lanes == "keyword":
        params |= KEYWORD_ONLY
    if stats == "table":
        params = {k: v for k, v in params.items() if not k.endswith("_pool")}
    params["keyword_statistics"] = stats
    return params


def timed(app: Any, tenant: str, params: dict[str, Any]) -> float:
    with app.db.tenant(tenant) as conn:
        prepare(conn, app, max(params["windows"], params["facts"], 1))
        started = time.perf_counter()
        run_statement(conn, "bm25", params)
        return (time.perf_counter() - started) * 1000


# A tenant's documents holding any word of a question (as the bm25 index matches them)
MATCHING = (
    "SELECT count(*) FROM {} WHERE tenant_id = %s AND tsv @@ "
    "replace(plainto_tsquery('english', %s)::text, ' & ', ' | ')::tsquery"
)


def full_pools(app: Any, queries: list[scale.Query], tenant: str) -> int:
    """Queries whose words are in at least keyword_pool of the tenant's memories."""
    pool = app.settings.search.keyword_pool
    full = 0
    with app.db.admin_connection() as conn:
        for query in queries:
            row = conn.execute(
                sql.SQL(MATCHING).format(sql.Identifier("memories")), (tenant, query.text)
            ).fetchone()
            full += int(row[0] if row else 0) >= pool
    return full


def locomo_bound(data_dir: Path, dataset: Path, pool: int) -> dict[str, Any]:
    """On a LoCoMo database (benchmarks/locomo.py --data-dir), per question: are its
    words in at least ``pool`` of its conversation's memories (facts), so that which
    documents are candidates may follow the shared statistics; and does the keyword
    lane's top 10 (the product's lane size) then differ from the tenant's BM25 over
    every matching document (a pool of 1,000, more than a conversation holds)?"""
    settings = scale.Settings.model_validate({"data_dir": str(data_dir)})
    db = scale.Database(settings)
    db.open()
    app = scale.service(db)
    counts = {"questions": 0}
    try:
        for sample in json.loads(dataset.read_text()):
            tenant = f"locomo-{sample['sample_id']}"
            for qa in sample["qa"]:
                counts["questions"] += 1
                for table, part in (("memories", "memory"), ("facts", "fact")):
                    full, differs = _bound_of(app, tenant, table, part, qa["question"], pool)
                    counts[f"{table}_full"] = counts.get(f"{table}_full", 0) + full
                    counts[f"{table}_top10_differs"] = (
                        counts.get(f"{table}_top10_differs", 0) + differs
                    )
    finally:
        db.close()
    return counts


def _bound_of(
    app: Any, tenant: str, table: str, part: str, question: str, pool: int
) -> tuple[bool, bool]:
    query = scale.Query(text=question, variants=[question], vectors=[np.zeros(scale.DIM)])
    params = scale.params_for(app, query, tenant=tenant, way="exact") | KEYWORD_ONLY
    params["result_limit"] = 20  # both parts of the lane whole (10 memories, 10 facts)
    lanes = {}
    with app.db.tenant(tenant) as conn:
        prepare(conn, app, 1)
        matching = conn.execute(sql.SQL(MATCHING).format(sql.Identifier(table)), (tenant, question))
        row = matching.fetchone()
        for size in (pool, 1000):
            params[f"keyword_{part}_pool"] = size
            rows = run_statement(conn, "bm25", params)
            lanes[size] = [r[1] for r in rows if (r[0] == "fact") == (table == "facts")]
    return int(row[0] if row else 0) >= pool, lanes[pool] != lanes[1000]


def run(big: int, small: int, query_count: int, seed: int, pool: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    vocab = scale.make_vocabulary(rng)
    corpus = scale.make_corpus(rng, vocab, big + small)
    corpus.memory_tenants = [
        SMALL if i % ((big + small) // small) == 0 else BIG for i in range(big + small)
    ]
    queries = scale.make_queries(rng, vocab, corpus, query_count)
    samples: dict[str, list[float]] = {}
    with scale.fresh_database("elephant-kwstats-", {"search": {"keyword_pool": pool}}) as db:
        load = scale.bulk_load(db, corpus)
        print(f"loaded {big + small} memories in {load.copy_s:.1f}s (+ index builds)")
        app = scale.service(db)
        for query in queries[:20]:  # warm-up, discarded
            for stats in STATISTICS:
                timed(app, SMALL, lane_params(app, query, SMALL, "fused", stats))
        load_before = os.getloadavg()
        for n, query in enumerate(queries):
            order = STATISTICS if n % 2 == 0 else STATISTICS[::-1]
            for tenant in (SMALL, BIG):
                for lanes in ("keyword", "fused"):
                    for stats in order:
                        params = lane_params(app, query, tenant, lanes, stats)
                        key = f"{tenant} {lanes} {stats}"
                        samples.setdefault(key, []).append(timed(app, tenant, params))
        load_after = os.getloadavg()
        if os.environ.get("KW_EXPLAIN"):
            params = lane_params(app, queries[0], BIG, "keyword", "tenant")
            with app.db.tenant(BIG) as conn:
                prepare(conn, app, 1)
                text = statement("bm25", None, "tenant")
                for row in conn.execute("EXPLAIN (ANALYZE, COSTS OFF) " + text, params):
                    print(row[0])
        small_rows = sum(1 for t in corpus.memory_tenants if t == SMALL)
        full = full_pools(app, queries, SMALL)
    return {
        "big_memories": big + small - small_rows,
        "small_memories": small_rows,
        "queries": len(queries),
        "keyword_pool": pool,
        "load_average_before": list(load_before),
        "load_average_after": list(load_after),
        "sql_ms": {key: scale.percentiles(values) for key, values in samples.items()},
        "small_queries_with_full_pool": full,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--big", type=int, default=30_000, help="memories of the big tenant")
    parser.add_argument("--small", type=int, default=1_000, help="memories of the small one")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pool", type=int, default=50, help="search.keyword_pool")
    parser.add_argument("--smoke", action="store_true", help="2,000 + 200 memories, 10 queries")
    parser.add_argument(
        "--out", type=Path, default=Path("benchmarks/results/keyword_tenant_stats.json")
    )
    parser.add_argument("--locomo-db", type=Path, help="a LoCoMo data dir: count full pools")
    parser.add_argument("--dataset", type=Path, default=Path("/work/shared/datasets/locomo10.json"))
    args = parser.parse_args()
    if args.locomo_db:
        counts = locomo_bound(args.locomo_db, args.dataset, args.pool)
        print(f"LoCoMo, keyword_pool {args.pool}: {counts}")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"command": " ".join(sys.argv), **counts}, indent=2))
        return
    if args.smoke:
        args.big, args.small, args.queries = 2_000, 200, 10
    started = time.perf_counter()
    result = run(args.big, args.small, args.queries, args.seed, args.pool)
    result["smoke"] = args.smoke
    result["command"] = " ".join(sys.argv)
    result["runtime_s"] = round(time.perf_counter() - started, 1)
    print(
        f"load average before {result['load_average_before']}, after {result['load_average_after']}"
    )
    print("| tenant, lanes, statistics | p50 ms | p95 ms |\n|---|---|---|")
    for key, value in result["sql_ms"].items():
        print(f"| {key} | {value['p50']} | {value['p95']} |")
    print(
        f"small tenant: {result['small_queries_with_full_pool']} of {result['queries']} "
        f"queries have words in >= keyword_pool ({result['keyword_pool']}) of its memories"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
