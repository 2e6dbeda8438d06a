"""Knowledge graph on both backends (Apache AGE and the relational tables): record, a
10k-entity / 30k-relation graph, 2-hop reads, search_nodes.

    .venv/bin/python benchmarks/graph.py [--backends age,relational] [--runs 7]
        [--entities 10000] [--relations 30000] [--queries 200] [--seed 7] [--smoke]
        [--embedder model|hash] [--out benchmarks/results/graph.json]

One fresh embedded server (temporary data dir), no keys, the real default embedder
(all-MiniLM-L6-v2 on this machine's CPU); one runtime per backend on it
(``graph.backend``) on a database of its own, each fed the same data (same seed).
Embeddings are cached by text, so the second backend does not embed again: every
time below is also given without the embedding (``store`` / ``without_embedding``),
which is what differs between the backends. Measured, per backend:

- record: one ``operations.record`` call with 100 entities and 200 relations
  (distinct pairs, types from the vocabulary), without observations and with 3
  observations per entity; median of --runs calls, each on a fresh tenant whose
  graph is provisioned first (AGE: a one-off per tenant, reported on its own;
  relational: nothing to provision); throughput in items (entities + relations +
  observations) per second of store time;
- build: a graph of --entities entities (1 observation each) and --relations
  relations through the service, in batches (1000 entities or 2000 relations per
  call), then ANALYZE; targets of relations are skewed (a few hubs, many leaves);
- 2-hop reads from --queries random seed entities: ``reads.neighbourhood(name,
  hops=2)`` (the GET /graph path: find the seed by name, then ``store.walk``: a
  recursive CTE on the relational backend, a statement per hop on AGE), node limit
  50 and 200; ``store.walk`` alone (2 hops, limit 200) and the unbounded store-level
  expansion (``store.relations`` of the seed, then of all its neighbours), each inside
  one tenant transaction;
- ``reads.search_nodes``: an exact name, a one-word prefix that matches many
  entities, and free text that only the observation lane finds.

``--smoke``: 200 entities, 600 relations, records of 20 + 40, 10 queries, one run
(seconds, after the model loads; the test suite runs it). ``--embedder hash``:
deterministic vectors from a hash of each text instead of the model, for timing the
backends on a busy machine (the 10k observations alone take the model minutes on
two shared cores); the free-text search then finds nothing meaningful, every other
measure is the same work. Times are wall-clock of the service call (pool checkout
and transaction included).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from app.config import Settings
from app.providers.embedder import Embedder, Vectors, build_embedder
from app.services.graph import operations as ops
from app.services.graph import reads
from app.services.graph.models import EntityIn, ObservationIn, RecordIn, RelationIn
from app.services.graph.store import GraphStore, entity_key
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
    """The real embedder, with the seconds spent inside it counted and its vectors cached by
    text (both backends are fed the same texts: the second one does not embed again)."""

    def __init__(self, inner: Embedder) -> None:
        self.model_name = inner.model_name
        self.dim = inner.dim
        self.seconds = 0.0
        self._inner = inner
        self._cache: dict[tuple[str, str], Any] = {}

    def _timed(
        self, kind: str, func: Callable[[Sequence[str]], Vectors], texts: Sequence[str]
    ) -> Vectors:
        missing = [t for t in dict.fromkeys(texts) if (kind, t) not in self._cache]
        if missing:
            started = time.perf_counter()
            try:
                vectors = func(missing)
            finally:
                self.seconds += time.perf_counter() - started
            self._cache.update({(kind, t): v for t, v in zip(missing, vectors, strict=True)})
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[(kind, t)] for t in texts]).astype(np.float32)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._timed("d", self._inner.embed_documents, texts)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._timed("q", self._inner.embed_queries, texts)


class HashEmbedder:
    """Unit vectors seeded by a hash of the text: the model's shape, none of its cost."""

    def __init__(self, model_name: str, dim: int) -> None:
        self.model_name = f"hash:{model_name}"
        self.dim = dim

    def _vectors(self, texts: Sequence[str]) -> Vectors:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
            row = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            rows.append(row / np.linalg.norm(row))
        return np.stack(rows) if rows else np.zeros((0, self.dim), dtype=np.float32)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._vectors(texts)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._vectors(texts)


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


@dataclass(frozen=True)
class Sizes:
    runs: int
    entities: int
    relations: int
    queries: int
    record_entities: int = 100
    record_relations: int = 200


def sizes(args: argparse.Namespace) -> Sizes:
    if args.smoke:
        return Sizes(runs=1, entities=200, relations=600, queries=10, record_entities=20,
                     record_relations=40)  # fmt: skip
    return Sizes(args.runs, args.entities, args.relations, args.queries)


@contextmanager
def fresh_runtimes(
    backends: Sequence[str], embedder_kind: str
) -> Iterator[tuple[dict[str, Elephant], TimedEmbedder, list[str]]]:
    """One embedded server; per backend (those the server can serve) a database of its own
    and a runtime on it, so neither backend runs on the other's rows (facts, indexes)."""
    tmp = tempfile.mkdtemp(prefix="elephant-graph-")
    opened: list[Elephant] = []
    try:
        base = Settings.model_validate({"data_dir": tmp, "log": {"level": "WARNING"}})
        inner: Embedder = (
            HashEmbedder(base.embedding.model, base.embedding.dim)
            if embedder_kind == "hash"
            else build_embedder(base.embedding)
        )
        embedder = TimedEmbedder(inner)
        runtimes: dict[str, Elephant] = {}
        skipped: list[str] = []
        for backend in backends:
            settings = base.model_copy(
                update={
                    "embedded": base.embedded.model_copy(update={"database": f"graph_{backend}"}),
                    "graph": base.graph.model_copy(update={"backend": backend}),
                }
            )
            elephant = Elephant.open(settings, embedder=embedder, use_llm_from_settings=False)
            opened.append(elephant)
            if elephant.graph is None:  # graph.backend age on a server without AGE
                skipped.append(backend)
            else:
                runtimes[backend] = elephant
        yield runtimes, embedder, skipped
    finally:
        for elephant in reversed(opened):
            elephant.close()
        shutil.rmtree(tmp, ignore_errors=True)


def store_of(elephant: Elephant) -> GraphStore:
    store = elephant.graph
    assert store is not None
    return store


# ---------------------------------------------------------------- (a) one record call


def bench_record(
    elephant: Elephant, embedder: TimedEmbedder, rng: np.random.Generator, size: Sizes
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    provision: list[float] = []
    backend = store_of(elephant).backend
    for observations in (0, 3):
        seconds, store_s, embedding = [], [], []
        items = size.record_entities * (1 + observations) + size.record_relations
        for run in range(size.runs):
            tenant = f"rec-{backend}-{observations}-{run}"
            provision.append(timed(store_of(elephant).ensure, tenant)[0])
            entity_names = names(rng, size.record_entities)
            pairs = relation_pairs(rng, size.record_relations, size.record_entities)
            request = RecordIn(
                entities=entities(rng, entity_names, observations),
                relations=relations(rng, entity_names, pairs),
            )
            embedder.seconds = 0.0
            elapsed, result = timed(ops.record, elephant, tenant, request)
            assert result.relations_created == size.record_relations, result
            assert result.observations_added == size.record_entities * observations, result
            seconds.append(elapsed)
            embedding.append(embedder.seconds)
            store_s.append(elapsed - embedder.seconds)
        key = "with_observations" if observations else "without_observations"
        out[key] = {
            "entities": size.record_entities,
            "relations": size.record_relations,
            "observations": size.record_entities * observations,
            "median_s": round(statistics.median(seconds), 3),
            "min_s": round(min(seconds), 3),
            "max_s": round(max(seconds), 3),
            "embedding_median_s": round(statistics.median(embedding), 3),
            "store_median_s": round(statistics.median(store_s), 4),
            "store_items_per_s": round(items / statistics.median(store_s), 1),
            "runs": size.runs,
        }
    out["provision_graph_median_s"] = round(statistics.median(provision), 4)
    return out


# ---------------------------------------------------------------- (b) the big graph


def build_graph(
    elephant: Elephant, embedder: TimedEmbedder, rng: np.random.Generator, tenant: str, size: Sizes
) -> tuple[list[str], dict[str, Any]]:
    entity_names = names(rng, size.entities)
    store_of(elephant).ensure(tenant)
    embedder.seconds = 0.0
    started = time.perf_counter()
    for start in range(0, size.entities, ENTITY_BATCH):
        batch = entities(rng, entity_names[start : start + ENTITY_BATCH], 1)
        ops.create_entities(elephant, tenant, batch)
    entity_s = time.perf_counter() - started
    entity_embed_s = embedder.seconds
    every = relations(rng, entity_names, relation_pairs(rng, size.relations, size.entities))
    started = time.perf_counter()
    for start in range(0, len(every), RELATION_BATCH):
        ops.create_relations(elephant, tenant, every[start : start + RELATION_BATCH])
    relation_s = time.perf_counter() - started
    started = time.perf_counter()
    with elephant.db.admin_connection() as conn:
        conn.execute("ANALYZE")
    analyze_s = time.perf_counter() - started
    report = {
        "entities": size.entities,
        "relations": size.relations,
        "observations": size.entities,
        "entity_batches_s": round(entity_s, 2),
        "entity_embedding_s": round(entity_embed_s, 2),
        "entities_per_s_without_embedding": round(
            size.entities / max(entity_s - entity_embed_s, 1e-9), 1
        ),
        "relation_batches_s": round(relation_s, 2),
        "relations_per_s": round(size.relations / relation_s, 1),
        "analyze_s": round(analyze_s, 2),
    }
    return entity_names, report


def two_hop_store(elephant: Elephant, tenant: str, key: str) -> int:
    """The store-level 2-hop expansion: relations of the seed, then of every neighbour."""
    store = store_of(elephant)
    with elephant.db.tenant(tenant) as conn:
        first = store.relations(conn, tenant, [key], active_only=True)
        ring = sorted({k for r in first for k in (r.source, r.target)} - {key})
        second = store.relations(conn, tenant, ring, active_only=True) if ring else []
        reached = {k for r in second for k in (r.source, r.target)} | set(ring) | {key}
    return len(reached)


def walk_store(elephant: Elephant, tenant: str, key: str) -> int:
    """``store.walk``: 2 hops, at most 200 entities (what neighbourhood runs after find)."""
    store = store_of(elephant)
    with elephant.db.tenant(tenant) as conn:
        return len(store.walk(conn, tenant, [key], 2, 200).entities)


def bench_reads(
    elephant: Elephant, rng: np.random.Generator, tenant: str, entity_names: Sequence[str], n: int
) -> dict[str, Any]:
    seeds = [entity_names[int(i)] for i in rng.choice(len(entity_names), size=n, replace=False)]
    for name in seeds[:10]:  # warm-up: caches, prepared statements
        reads.neighbourhood(elephant, tenant, name, hops=2)
        two_hop_store(elephant, tenant, entity_key(name))
        walk_store(elephant, tenant, entity_key(name))
    hood: dict[int, list[float]] = {50: [], 200: []}
    hood_nodes: dict[int, list[int]] = {50: [], 200: []}
    store_s: list[float] = []
    store_nodes: list[int] = []
    walk_s: list[float] = []
    walk_nodes: list[int] = []
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
        elapsed, reached = timed(walk_store, elephant, tenant, entity_key(name))
        walk_s.append(elapsed)
        walk_nodes.append(reached)
    out: dict[str, Any] = {
        f"neighbourhood_hops2_limit{limit}_ms": {
            **stats_ms(times),
            "nodes_median": int(statistics.median(hood_nodes[limit])),
        }
        for limit, times in hood.items()
    }
    out["store_walk_hops2_limit200_ms"] = {
        **stats_ms(walk_s),
        "nodes_median": int(statistics.median(walk_nodes)),
    }
    out["store_two_hop_unbounded_ms"] = {
        **stats_ms(store_s),
        "nodes_median": int(statistics.median(store_nodes)),
        "nodes_p95": int(np.percentile(store_nodes, 95)),
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
            "without_embedding_ms": stats_ms(
                [t - e for t, e in zip(times, embedding, strict=True)]
            ),
            "total_matched_median": int(statistics.median(matched)),
        }
    return out


def bench_backend(
    elephant: Elephant, embedder: TimedEmbedder, seed: int, size: Sizes
) -> dict[str, Any]:
    """Everything for one backend; the same seed gives every backend the same data."""
    rng = np.random.default_rng(seed)
    backend = store_of(elephant).backend
    tenant = f"big-{backend}"
    record = bench_record(elephant, embedder, rng, size)
    entity_names, build = build_graph(elephant, embedder, rng, tenant, size)
    two_hop = bench_reads(elephant, rng, tenant, entity_names, size.queries)
    search = bench_search(elephant, embedder, rng, tenant, entity_names, size.queries)
    return {"record": record, "build": build, "two_hop": two_hop, "search_nodes": search}


# ---------------------------------------------------------------- report


def table(results: dict[str, dict[str, Any]]) -> list[str]:
    """One row per measure; per backend a p50 and a p95 column (or two values)."""
    backends = list(results)
    lines = [
        "| measure | " + " | ".join(f"{b} p50 | {b} p95" for b in backends) + " |",
        "|" + " --- |" * (1 + 2 * len(backends)),
    ]

    def row(name: str, cells: list[tuple[Any, Any]]) -> None:
        lines.append(f"| {name} | " + " | ".join(f"{a} | {b}" for a, b in cells) + " |")

    first = results[backends[0]]
    for key in ("without_observations", "with_observations"):
        shape = first["record"][key]
        runs = [results[b]["record"][key] for b in backends]
        row(
            f"record {shape['entities']} entities + {shape['relations']} relations + "
            f"{shape['observations']} observations: median s without embedding (items/s)",
            [(r["store_median_s"], f"({r['store_items_per_s']}/s)") for r in runs],
        )
    builds = [results[b]["build"] for b in backends]
    row(
        "build: entities/s without embedding, relations/s",
        [(b["entities_per_s_without_embedding"], b["relations_per_s"]) for b in builds],
    )
    for name, measure in first["two_hop"].items():
        cells = [(results[b]["two_hop"][name]["p50"], results[b]["two_hop"][name]["p95"])
                 for b in backends]  # fmt: skip
        row(f"{name} (nodes median {measure['nodes_median']})", cells)
    for kind in first["search_nodes"]:
        cells = [
            (results[b]["search_nodes"][kind]["without_embedding_ms"]["p50"],
             results[b]["search_nodes"][kind]["without_embedding_ms"]["p95"])
            for b in backends
        ]  # fmt: skip
        row(f"search_nodes {kind}, ms without the query embedding", cells)
    return lines


# ---------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backends", default="age,relational", help="Comma-separated.")
    parser.add_argument("--runs", type=int, default=7, help="record() calls per variant.")
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--relations", type=int, default=30_000)
    parser.add_argument("--queries", type=int, default=200, help="Random seeds / searches.")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--smoke", action="store_true", help="Tiny sizes, for the test suite.")
    parser.add_argument(
        "--embedder", choices=("model", "hash"), default="model", help="See above (default model)."
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/graph.json"))
    args = parser.parse_args()
    size = sizes(args)
    wanted = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = [b for b in wanted if b not in ("age", "relational")]
    if unknown or not wanted:
        parser.error(f"--backends: age and/or relational, not {', '.join(unknown) or 'nothing'}")
    # SIGTERM ends the run through SystemExit, so the embedded server is stopped.
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    load_before = os.getloadavg()[0]
    started = time.perf_counter()

    results: dict[str, dict[str, Any]] = {}
    with fresh_runtimes(wanted, args.embedder) as (runtimes, embedder, skipped):
        for name in skipped:
            print(f"{name}: skipped (this server has no Apache AGE)")
        for backend, elephant in runtimes.items():
            load = os.getloadavg()[0]
            results[backend] = bench_backend(elephant, embedder, args.seed, size)
            # The machine's 1-minute load before and after this backend's part.
            results[backend]["loadavg_1m"] = [round(load, 2), round(os.getloadavg()[0], 2)]
            build = results[backend]["build"]
            print(
                f"{backend}: built {build['entities']} entities and {build['relations']} "
                f"relations ({build['relations_per_s']} relations/s)",
                flush=True,
            )
    if not results:
        raise SystemExit("no backend to measure")
    print()
    print("\n".join(table(results)))

    body = {
        "benchmark": "graph",
        "smoke": args.smoke,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        # The 1-minute load average at the start and the end: about 1 is this benchmark
        # alone; more means the machine was shared and the times are inflated.
        "loadavg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "seconds": round(time.perf_counter() - started, 1),
        "seed": args.seed,
        "embedder": args.embedder,
        "sizes": size.__dict__,
        "skipped": skipped,
        "backends": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(body, indent=2))
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
