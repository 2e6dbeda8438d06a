"""Do searches change what later searches find? Drift, WAL and index growth of reads.

    .venv/bin/python benchmarks/drift.py [--dataset ../shared/datasets/locomo10.json]
        [--questions 60] [--wal-searches 1000] [--bloat-memories 20000]
        [--bloat-searches 10000] [--parts in_process,http,growth] [--smoke]
        [--out benchmarks/results/drift.json]

Everything runs as shipped: default settings, access recording on (search() hands its
hits to the recorder, which writes a batch per tenant every
lifecycle.access_flush_seconds), autovacuum and checkpoints as configured.

1. Drift, in process: the first LoCoMo conversation is ingested (offline providers),
   then its first --questions questions of categories 1-4 are searched (limit 60) in
   three recorded passes, the recorder flushed after each. Each pass's 60 result lists
   (ids in order) are compared with the pass before: identical lists, identical top-10s,
   identical top-1s. Before issue 26 one recorded pass left 0 of 60 lists identical.
2. WAL: pg_current_wal_lsn() around --wal-searches recorded searches (the questions
   over and over, the last batch flushed), and around as many unrecorded ones:
   bytes per search. Target: <= 2 KB per recorded search.
   Then search time with recording on and off, interleaved (question i recorded in the
   first round when i is even, in the second when odd): recording must cost nothing.
3. Drift over HTTP: the same database served by `elephant serve` (a subprocess, its
   own recorder with a 1 s interval so the run is short); two recorded passes over
   GET /search, two intervals apart, compared as in 1.
4. Index growth: a tenant of --bloat-memories synthetic memories (benchmarks/scale.py's
   corpus, bulk-loaded) gets --bloat-searches recorded searches through search() (real
   query embedding); the size of every index of memories, facts and passages before and
   after. Target: each within 5%.

`--smoke`: two LoCoMo sessions, 6 questions, 20 WAL searches, a 1,000-memory tenant
and 100 searches: seconds, so the benchmark cannot rot (tests/benchmarks/test_benchmark_smoke.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # scale.py, locomo.py
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ is not installed

import scale
from locomo import DEFAULT_DATASET, TENANT_PREFIX, Question, load_questions

from app.config import Settings
from app.services.jobs.runner import drain
from app.services.memory import ingest as ingest_service
from app.services.retrieval.schemas import SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant
from benchmarks.common import served, write_locomo_smoke_sample

LIMIT = 60
WAL_TARGET_BYTES = 2048
INDEX_GROWTH_TARGET = 0.05
HTTP_FLUSH_S = 1.0
INDEXED_TABLES = ("memories", "facts", "passages")
PARTS = ("in_process", "http", "growth")

Lists = list[list[str]]


def compare(before: Lists, after: Lists) -> dict[str, Any]:
    pairs = list(zip(before, after, strict=True))
    return {
        "questions": len(pairs),
        "identical_lists": sum(a == b for a, b in pairs),
        "identical_top10": sum(a[:10] == b[:10] for a, b in pairs),
        "identical_top1": sum(a[:1] == b[:1] for a, b in pairs),
    }


def wal_lsn(elephant: Elephant) -> int:
    with elephant.db.admin_connection() as conn:
        row = conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()
    assert row is not None
    return int(row[0])


def index_sizes(elephant: Elephant) -> dict[str, int]:
    with elephant.db.admin_connection() as conn:
        rows = conn.execute(
            "SELECT i.indexrelid::regclass::text, pg_relation_size(i.indexrelid) "
            "FROM pg_index AS i WHERE i.indrelid = ANY(%s::regclass[]) ORDER BY 1",
            (list(INDEXED_TABLES),),
        ).fetchall()
    return {str(name): int(size) for name, size in rows}


def search_pass(elephant: Elephant, questions: Sequence[Question], *, record: bool) -> Lists:
    lists = []
    for question in questions:
        request = SearchRequest(query=question.question, limit=LIMIT)
        hits = search(elephant, question.tenant, request, record_access=record).hits
        lists.append([hit.id for hit in hits])
    return lists


# ---------------------------------------------------------------- 1 and 2: in process


def in_process(
    elephant: Elephant, questions: Sequence[Question], wal_searches: int
) -> dict[str, Any]:
    passes: list[Lists] = []
    wal: list[int] = []
    for _ in range(3):
        start = wal_lsn(elephant)
        passes.append(search_pass(elephant, questions, record=True))
        elephant.access.flush()
        wal.append(wal_lsn(elephant) - start)
    drift = [compare(passes[n - 1], passes[n]) for n in (1, 2)]
    print(f"  in process: pass 2 vs 1 {drift[0]}; pass 3 vs 2 {drift[1]}")

    per_search: dict[str, float] = {}
    for record in (False, True):
        start, count = wal_lsn(elephant), 0
        while count < wal_searches:
            question = questions[count % len(questions)]
            request = SearchRequest(query=question.question, limit=LIMIT)
            search(elephant, question.tenant, request, record_access=record)
            count += 1
        elephant.access.flush()
        per_search["recorded" if record else "unrecorded"] = round(
            (wal_lsn(elephant) - start) / wal_searches, 1
        )
    print(f"  WAL bytes per search over {wal_searches}: {per_search}")
    timing = recording_ab(elephant, questions)
    print(f"  search ms, recorded vs unrecorded, interleaved: {timing}")
    return {
        "recording_ab_ms": timing,
        "drift": {"pass2_vs_pass1": drift[0], "pass3_vs_pass2": drift[1]},
        "wal_bytes_per_pass": wal,
        "wal_bytes_per_search": per_search,
        "wal_searches": wal_searches,
    }


def recording_ab(elephant: Elephant, questions: Sequence[Question]) -> dict[str, Any]:
    """search() with access recording on and off, interleaved: question i is recorded in
    the first round when i is even, in the second when it is odd (each setting sees every
    question once, never the same question twice in a row)."""
    times: dict[bool, list[float]] = {True: [], False: []}
    for round_ in (0, 1):
        for i, question in enumerate(questions):
            record = (i + round_) % 2 == 0
            request = SearchRequest(query=question.question, limit=LIMIT)
            started = time.perf_counter()
            search(elephant, question.tenant, request, record_access=record)
            times[record].append((time.perf_counter() - started) * 1000)
    elephant.access.flush()

    def cell(values: list[float]) -> dict[str, float]:
        p50, p95 = np.percentile(np.array(values), [50, 95])
        return {"p50": round(float(p50), 2), "p95": round(float(p95), 2)}

    on, off = cell(times[True]), cell(times[False])
    return {"recorded": on, "unrecorded": off, "p50_ratio": round(on["p50"] / off["p50"], 3)}


# ---------------------------------------------------------------- 3: over HTTP


def over_http(data_dir: Path, questions: Sequence[Question]) -> dict[str, Any]:
    env = {"ELEPHANT_LIFECYCLE_ACCESS_FLUSH_SECONDS": str(HTTP_FLUSH_S)}
    with served(data_dir, **env) as server, httpx.Client(base_url=server.url, timeout=60) as c:

        def one_pass() -> Lists:
            lists = []
            for question in questions:
                response = c.get(
                    "/search",
                    params={"q": question.question, "limit": LIMIT},
                    headers={"X-Elephant-Tenant": question.tenant},
                )
                response.raise_for_status()
                lists.append([hit["id"] for hit in response.json()["results"]])
            return lists

        first = one_pass()
        time.sleep(2 * HTTP_FLUSH_S + 0.5)  # the server's recorder writes its batch
        second = one_pass()
        time.sleep(2 * HTTP_FLUSH_S + 0.5)
        third = one_pass()
    drift = {"pass2_vs_pass1": compare(first, second), "pass3_vs_pass2": compare(second, third)}
    print(f"  over HTTP: {drift}")
    return {"drift": drift, "flush_seconds": HTTP_FLUSH_S}


# ---------------------------------------------------------------- 4: index growth


def index_growth(memories: int, searches: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    vocab = scale.make_vocabulary(rng)
    corpus = scale.make_corpus(rng, vocab, memories)
    queries = scale.make_queries(rng, vocab, corpus, 500)
    with tempfile.TemporaryDirectory(prefix="elephant-drift-bloat-") as tmp:
        settings = Settings.model_validate({"data_dir": tmp, "log": {"level": "WARNING"}})
        elephant = Elephant.open(settings, use_llm_from_settings=False)
        try:
            scale.bulk_load(elephant.db, corpus)
            before = index_sizes(elephant)
            started = time.perf_counter()
            for n in range(searches):
                request = SearchRequest(query=queries[n % len(queries)].text)
                search(elephant, scale.TENANT, request)
            elephant.access.flush()
            seconds = time.perf_counter() - started
            with elephant.db.admin_connection() as conn:
                row = conn.execute(
                    "SELECT count(*), coalesce(sum(access_count), 0) FROM access_stats"
                ).fetchone()
            after = index_sizes(elephant)
        finally:
            elephant.close()
    growth = {name: round(after[name] / before[name] - 1, 4) for name in before if before[name]}
    worst = max(growth.items(), key=lambda item: abs(item[1]))
    print(
        f"  {searches} recorded searches on {memories} memories in {seconds:.0f}s: largest "
        f"index change {worst[0]} {worst[1]:+.1%}; access_stats {row}"
    )
    return {
        "memories": memories,
        "searches": searches,
        "seconds": round(seconds, 1),
        "index_bytes_before": before,
        "index_bytes_after": after,
        "growth": growth,
        "largest_change": {"index": worst[0], "growth": worst[1]},
        "access_stats_rows_and_uses": [int(row[0]), int(row[1])] if row else None,
    }


# ---------------------------------------------------------------- main


def timed(what: str, step: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    started = time.perf_counter()
    print(f"{what} ...", flush=True)
    result = step()
    result["elapsed_s"] = round(time.perf_counter() - started, 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--wal-searches", type=int, default=1000)
    parser.add_argument("--bloat-memories", type=int, default=20_000)
    parser.add_argument("--bloat-searches", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument(
        "--parts", default=",".join(PARTS), help=f"Comma-separated, of {', '.join(PARTS)}."
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, seconds")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/drift.json"))
    args = parser.parse_args()
    if args.smoke:
        args.questions, args.wal_searches = 6, 20
        args.bloat_memories, args.bloat_searches = 1_000, 100
    parts = {part.strip() for part in args.parts.split(",") if part.strip()}
    unknown = parts - set(PARTS)
    if unknown:
        parser.error(f"unknown parts {sorted(unknown)}; choose from {list(PARTS)}")
    load_before = os.getloadavg()
    body: dict[str, Any] = {
        "benchmark": "drift",
        "smoke": args.smoke,
        "parts": sorted(parts),
        "limit": LIMIT,
        "settings": "product defaults; access recording on",
        "targets": {
            "identical_lists": "all",
            "wal_bytes_per_recorded_search": WAL_TARGET_BYTES,
            "index_growth": INDEX_GROWTH_TARGET,
        },
    }
    verdicts: dict[str, bool] = {}
    if parts & {"in_process", "http"}:
        with tempfile.TemporaryDirectory(prefix="elephant-drift-") as tmp:
            dataset, source = args.dataset, str(args.dataset)
            if args.smoke or not dataset.is_file():
                dataset, source = write_locomo_smoke_sample(args.dataset, Path(tmp))
            samples = json.loads(dataset.read_text())[:1]
            items = ingest_service.read_items(dataset, TENANT_PREFIX, "locomo", split_tenants=True)
            tenant = items[0].tenant
            items = [item for item in items if item.tenant == tenant]
            questions = [q for q in load_questions(samples) if q.category in (1, 2, 3, 4)]
            questions = questions[: args.questions]
            body.update(dataset=source, tenant=tenant, questions=len(questions))
            data_dir = Path(tmp) / "data"
            settings = Settings.model_validate(
                {"data_dir": str(data_dir), "log": {"level": "WARNING"}}
            )
            elephant = Elephant.open(settings, use_llm_from_settings=False)
            try:
                started = time.perf_counter()
                report = ingest_service.ingest(elephant, items)
                drain(elephant)
                print(
                    f"ingested {report.turns} turns of {tenant} in "
                    f"{time.perf_counter() - started:.0f}s; {len(questions)} questions"
                )
                if "in_process" in parts:
                    local = timed("drift and WAL in process", lambda: in_process(
                        elephant, questions, args.wal_searches
                    ))  # fmt: skip
                    body["in_process"] = local
                    same = local["drift"]["pass2_vs_pass1"]["identical_lists"]
                    verdicts["drift_in_process"] = same == len(questions)
                    wal = local["wal_bytes_per_search"]["recorded"]
                    verdicts["wal_per_recorded_search"] = wal <= WAL_TARGET_BYTES
            finally:
                elephant.close()
            if "http" in parts:
                http = timed("drift over HTTP", lambda: over_http(data_dir, questions))
                body["over_http"] = http
                same = http["drift"]["pass2_vs_pass1"]["identical_lists"]
                verdicts["drift_over_http"] = same == len(questions)
    if "growth" in parts:
        growth = timed(
            "index growth",
            lambda: index_growth(args.bloat_memories, args.bloat_searches, args.seed),
        )
        body["index_growth"] = growth
        change = abs(growth["largest_change"]["growth"])
        verdicts["index_growth"] = change <= INDEX_GROWTH_TARGET
    body["met"] = verdicts
    body["loadavg"] = {
        "before": [round(x, 2) for x in load_before],
        "after": [round(x, 2) for x in os.getloadavg()],
    }
    body["machine"] = {"python": platform.python_version(), "cpus": os.cpu_count()}
    print("\n| target | met |\n| --- | --- |")
    for name, ok in verdicts.items():
        print(f"| {name} | {'yes' if ok else 'NO'} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(body, indent=2, default=str))
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
