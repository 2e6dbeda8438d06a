"""Knowledge graph (Apache AGE): batch record, a 10k-entity graph, 2-hop reads, search_nodes.

    .venv/bin/python benchmarks/graph.py [--runs 7] [--entities 10000] [--relations 30000]
        [--queries 200] [--seed 7] [--out benchmarks/results/graph.json]

Runs on a fresh embedded database (temporary data dir), no keys, the real default
embedder (all-MiniLM-L6-v2 on this machine's CPU). Measured:

- record: one ``operations.record`` call with 100 entities and 200 relations
  (distinct pairs, types from the vocabulary), without observations and with
  3 observations per entity (300 observation facts, embedded inside the call);
  median of --runs calls, each on a fresh tenant whose graph is provisioned
  first (provisioning, a one-off per tenant, is reported on its own);
- build: a graph of --entities entities (1 observation each) and --relations
  relations through the service, in batches (1000 entities or 2000 relations per
  call), then ANALYZE; targets of relations are skewed (a few hubs, many leaves);
- 2-hop reads on that graph, from --queries random seed entities:
  ``reads.neighbourhood(name, hops=2)`` (the GET /graph path: find the seed by
  name, breadth first, node limit 50 and 200) and the store-level expansion
  (``store.relations`` of the seed, then of all its neighbours, unbounded) inside
  one tenant transaction;
- ``reads.search_nodes`` on that graph: an exact name, a one-word prefix that
  matches many entities, and free text that only the observation lane finds.

Times are wall-clock of the service call (pool checkout and transaction included).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from app.config import Settings
from app.providers.embedder import Embedder, Vectors, build_embedder
from app.services.graph import operations as ops
from app.services.graph import reads
from app.services.graph.models import EntityIn, ObservationIn, RecordIn, RelationIn
from app.services.graph.store import entity_key
from app.services.graph.vocabulary import RELATIONS
from app.services.runtime import Elephant

T = TypeVar("T")
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u")]
ROLES = ("concept", "finding", "artifact", "person", "organization", "place", "task", "event")
DOMAINS = ("software", "music", "history", "health", "finance", "general")
TOPICS = (
    "migrates the billing service to Postgres",
    "plays cello in a string quartet",
    "studies the history of Byzantine trade",
    "runs a marathon training plan",
    "reviews quarterly finance reports",
    "writes a novel about lighthouse keepers",
    "designs a vector index for search",
    "organises a jazz festival in Lisbon",
)
ENTITY_BATCH = 1000
RELATION_BATCH = 2000
# Relations allowed between any two entities (the vocabulary has no domain/range rules).
RELATION_TYPES = tuple(r for r in RELATIONS if r != "supersedes")


class TimedEmbedder:
    """The real embedder, with the seconds spent inside it counted."""

    def __init__(self, inner: Embedder) -> None:
        self.model_name = inner.model_name
        self.dim = inner.dim
        self.seconds = 0.0
        self._inner = inner

    def _timed(self, func: Callable[[Sequence[str]], Vectors], texts: Sequence[str]) -> Vectors:
        started = time.perf_counter()
        try:
            return func(texts)
        finally:
            self.seconds += time.perf_counter() - started

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._timed(self._inner.embed_documents, texts)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._timed(self._inner.embed_queries, texts)


def stats_ms(values: Sequence[float]) -> dict[str, float]:
    ms = np.array(values) * 1000
    p50, p95, p99 = np.percentile(ms, [50, 95, 99])
    return {
        "p50": round(float(p50), 2),
        "p95": round(float(p95), 2),
        "p99": round(float(p99), 2),
        "mean": round(float(ms.mean()), 2),
        "count": len(values),
    }


def timed(func: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[float, T]:
    started = time.perf_counter()
    result = func(*args, **kwargs)
    return time.perf_counter() - started, result


# ---------------------------------------------------------------- synthetic graph


def names(rng: np.random.Generator, count: int) -> list[str]:
    """Distinct two-word names of pseudo-words ('Kavo Rilemu')."""
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < count:
        words = [
            "".join(rng.choice(SYLLABLES, size=int(rng.integers(2, 4)))).capitalize()
            for _ in range(2)
        ]
        name = " ".join(words)
        if entity_key(name) not in seen:
            seen.add(entity_key(name))
            out.append(name)
    return out


def entities(
    rng: np.random.Generator, entity_names: Sequence[str], observations: int
) -> list[EntityIn]:
    return [
        EntityIn(
            name=name,
            entity_type=str(rng.choice(ROLES)),
            domain=str(rng.choice(DOMAINS)),
            observations=[
                ObservationIn(content=f"{name} {TOPICS[int(rng.integers(len(TOPICS)))]} ({i})")
                for i in range(observations)
            ],
        )
        for name in entity_names
    ]


def relation_pairs(rng: np.random.Generator, count: int, size: int) -> list[tuple[int, int]]:
    """Distinct (source, target) pairs: uniform sources, Zipf-skewed targets (hubs)."""
    weights = 1.0 / np.arange(1, size + 1) ** 0.8
    target_p = weights / weights.sum()
    order = rng.permutation(size)  # hubs spread over the name order
    pairs: set[tuple[int, int]] = set()
    while len(pairs) < count:
        need = count - len(pairs)
        sources = rng.integers(0, size, size=need * 2)
        targets = order[rng.choice(size, size=need * 2, p=target_p)]
        for s, t in zip(sources.tolist(), targets.tolist(), strict=True):
            if s != t:
                pairs.add((s, t))
                if len(pairs) == count:
                    break
    return sorted(pairs)


def relations(
    rng: np.random.Generator, entity_names: Sequence[str], pairs: Sequence[tuple[int, int]]
) -> list[RelationIn]:
    return [
        RelationIn(
            source=entity_names[s],
            relation_type=str(rng.choice(RELATION_TYPES)),
            target=entity_names[t],
        )
        for s, t in pairs
    ]


# ---------------------------------------------------------------- runtime


@contextmanager
def fresh_elephant() -> Iterator[tuple[Elephant, TimedEmbedder]]:
    tmp = tempfile.mkdtemp(prefix="elephant-graph-")
    elephant: Elephant | None = None
    try:
        settings = Settings.model_validate({"data_dir": tmp, "log": {"level": "WARNING"}})
        embedder = TimedEmbedder(build_embedder(settings.embedding))
        elephant = Elephant.open(settings, embedder=embedder, use_llm_from_settings=False)
        yield elephant, embedder
    finally:
        if elephant is not None:
            elephant.close()
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------- (a) one record call


def bench_record(
    elephant: Elephant, embedder: TimedEmbedder, rng: np.random.Generator, runs: int
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    provision: list[float] = []
    for observations in (0, 3):
        seconds, embedding = [], []
        for run in range(runs):
            tenant = f"rec-{observations}-{run}"
            provision.append(timed(elephant.graph.ensure, tenant)[0])
            entity_names = names(rng, 100)
            request = RecordIn(
                entities=entities(rng, entity_names, observations),
                relations=relations(rng, entity_names, relation_pairs(rng, 200, 100)),
            )
            embedder.seconds = 0.0
            elapsed, result = timed(ops.record, elephant, tenant, request)
            assert result.relations_created == 200, result
            assert result.observations_added == 100 * observations, result
            seconds.append(elapsed)
            embedding.append(embedder.seconds)
        key = "with_observations" if observations else "without_observations"
        out[key] = {
            "entities": 100,
            "relations": 200,
            "observations": 100 * observations,
            "median_s": round(statistics.median(seconds), 3),
            "min_s": round(min(seconds), 3),
            "max_s": round(max(seconds), 3),
            "embedding_median_s": round(statistics.median(embedding), 3),
            "runs": runs,
        }
    out["provision_graph_median_s"] = round(statistics.median(provision), 3)
    return out


# ---------------------------------------------------------------- (b) the big graph


def build_graph(
    elephant: Elephant,
    embedder: TimedEmbedder,
    rng: np.random.Generator,
    tenant: str,
    size: int,
    relation_count: int,
) -> tuple[list[str], dict[str, Any]]:
    entity_names = names(rng, size)
    elephant.graph.ensure(tenant)
    embedder.seconds = 0.0
    started = time.perf_counter()
    for start in range(0, size, ENTITY_BATCH):
        batch = entities(rng, entity_names[start : start + ENTITY_BATCH], 1)
        ops.create_entities(elephant, tenant, batch)
    entity_s = time.perf_counter() - started
    entity_embed_s = embedder.seconds
    every = relations(rng, entity_names, relation_pairs(rng, relation_count, size))
    started = time.perf_counter()
    for start in range(0, len(every), RELATION_BATCH):
        ops.create_relations(elephant, tenant, every[start : start + RELATION_BATCH])
    relation_s = time.perf_counter() - started
    started = time.perf_counter()
    with elephant.db.admin_connection() as conn:
        conn.execute("ANALYZE")
    analyze_s = time.perf_counter() - started
    report = {
        "entities": size,
        "relations": relation_count,
        "observations": size,
        "entity_batches_s": round(entity_s, 2),
        "entity_embedding_s": round(entity_embed_s, 2),
        "entities_per_s": round(size / entity_s, 1),
        "relation_batches_s": round(relation_s, 2),
        "relations_per_s": round(relation_count / relation_s, 1),
        "analyze_s": round(analyze_s, 2),
    }
    return entity_names, report


def two_hop_store(elephant: Elephant, tenant: str, key: str) -> int:
    """The store-level 2-hop expansion: relations of the seed, then of every neighbour."""
    store = elephant.graph
    with elephant.db.tenant(tenant) as conn:
        first = store.relations(conn, tenant, [key], active_only=True)
        ring = sorted({k for r in first for k in (r.source, r.target)} - {key})
        second = store.relations(conn, tenant, ring, active_only=True) if ring else []
        reached = {k for r in second for k in (r.source, r.target)} | set(ring) | {key}
    return len(reached)


def bench_reads(
    elephant: Elephant, rng: np.random.Generator, tenant: str, entity_names: Sequence[str], n: int
) -> dict[str, Any]:
    seeds = [entity_names[int(i)] for i in rng.choice(len(entity_names), size=n, replace=False)]
    for name in seeds[:10]:  # warm-up: caches, prepared statements
        reads.neighbourhood(elephant, tenant, name, hops=2)
        two_hop_store(elephant, tenant, entity_key(name))
    hood: dict[int, list[float]] = {50: [], 200: []}
    hood_nodes: dict[int, list[int]] = {50: [], 200: []}
    store_s: list[float] = []
    store_nodes: list[int] = []
    for name in seeds:
        for limit in hood:
            elapsed, result = timed(
                reads.neighbourhood, elephant, tenant, name, hops=2, limit=limit
            )
            hood[limit].append(elapsed)
            hood_nodes[limit].append(len(result.nodes))
        elapsed, reached = timed(two_hop_store, elephant, tenant, entity_key(name))
        store_s.append(elapsed)
        store_nodes.append(reached)
    out: dict[str, Any] = {
        f"neighbourhood_hops2_limit{limit}_ms": {
            **stats_ms(times),
            "nodes_median": int(statistics.median(hood_nodes[limit])),
        }
        for limit, times in hood.items()
    }
    out["store_two_hop_ms"] = {
        **stats_ms(store_s),
        "nodes_reached_median": int(statistics.median(store_nodes)),
        "nodes_reached_p95": int(np.percentile(store_nodes, 95)),
    }
    return out


def bench_search(
    elephant: Elephant,
    embedder: TimedEmbedder,
    rng: np.random.Generator,
    tenant: str,
    entity_names: Sequence[str],
    n: int,
) -> dict[str, Any]:
    picks = [entity_names[int(i)] for i in rng.choice(len(entity_names), size=n, replace=False)]
    kinds: dict[str, list[str]] = {
        "exact_name": picks,
        "one_word_prefix": [name.split()[0][:4] for name in picks],
        "free_text": [TOPICS[int(rng.integers(len(TOPICS)))].split(" ", 1)[1] for _ in picks],
    }
    out: dict[str, Any] = {}
    for kind, queries in kinds.items():
        for query in queries[:10]:
            reads.search_nodes(elephant, tenant, query)
        times, embedding, matched = [], [], []
        for query in queries:
            embedder.seconds = 0.0
            elapsed, result = timed(reads.search_nodes, elephant, tenant, query)
            times.append(elapsed)
            embedding.append(embedder.seconds)
            matched.append(result.total_matched)
        out[kind] = {
            **stats_ms(times),
            "query_embedding_p50_ms": round(statistics.median(embedding) * 1000, 2),
            "without_embedding_ms": stats_ms(
                [t - e for t, e in zip(times, embedding, strict=True)]
            ),
            "total_matched_median": int(statistics.median(matched)),
        }
    return out


# ---------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7, help="record() calls per variant.")
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--relations", type=int, default=30_000)
    parser.add_argument("--queries", type=int, default=200, help="Random seeds / searches.")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/graph.json"))
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    load_before = os.getloadavg()[0]

    with fresh_elephant() as (elephant, embedder):
        record = bench_record(elephant, embedder, rng, args.runs)
        for key in ("without_observations", "with_observations"):
            r = record[key]
            print(
                f"record 100 entities + 200 relations + {r['observations']} observations: "
                f"median {r['median_s']:.3f}s (min {r['min_s']:.3f}, max {r['max_s']:.3f}; "
                f"embedding {r['embedding_median_s']:.3f}s)"
            )
        print(f"graph provisioning per tenant: median {record['provision_graph_median_s']:.3f}s")

        entity_names, build = build_graph(
            elephant, embedder, rng, "big", args.entities, args.relations
        )
        print(
            f"build {build['entities']} entities in {build['entity_batches_s']}s "
            f"(embedding {build['entity_embedding_s']}s), {build['relations']} relations in "
            f"{build['relation_batches_s']}s ({build['relations_per_s']}/s)"
        )
        two_hop = bench_reads(elephant, rng, "big", entity_names, args.queries)
        search = bench_search(elephant, embedder, rng, "big", entity_names, args.queries)

    print("\n| measure | p50 ms | p95 ms | p99 ms | size |")
    print("| --- | --- | --- | --- | --- |")
    rows = {
        **two_hop,
        **{f"search_nodes {k}": v for k, v in search.items()},
        **{f"search_nodes {k} (query embedding excluded)": v["without_embedding_ms"]
           for k, v in search.items()},
    }  # fmt: skip
    for name, row in rows.items():
        size = ", ".join(f"{k} {v}" for k, v in row.items() if k.endswith(("median", "p95"))
                         and not isinstance(v, float))  # fmt: skip
        print(f"| {name} | {row['p50']} | {row['p95']} | {row['p99']} | {size} |")

    body = {
        "benchmark": "graph",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        # The 1-minute load average at the start and the end: about 1 is this benchmark
        # alone; more means the machine was shared and the times are inflated.
        "loadavg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "seed": args.seed,
        "record": record,
        "build": build,
        "two_hop": two_hop,
        "search_nodes": search,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(body, indent=2))
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
