"""Ingest throughput on LoCoMo with the offline providers.

    .venv/bin/python benchmarks/ingest.py [--dataset ../shared/datasets/locomo10.json]
        [--limit N] [--smoke] [--out benchmarks/results/ingest.json]

Each LoCoMo conversation goes into its own tenant of a fresh embedded database
(a temporary data dir), through the real write path: commit_conversation per
session (windows, gate, dedup), then the extraction jobs (offline extractor,
fact embedding, contradiction checks). Reports turns/s, windows/s, facts/s and
where the time went: embedding (inside the embedder), offline extraction
(Python heuristics) and the rest (database round trips and pipeline glue).
Target: that rest at most 20% of the embedding time.

`--smoke` ingests the first conversation's first two sessions (a synthetic
LoCoMo-shaped conversation when the dataset is absent) the same way, in seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from psycopg import sql

from app.config import Settings
from app.providers.embedder import Embedder, Vectors, build_embedder
from app.services.facts import pipeline
from app.services.jobs.runner import drain
from app.services.memory import ingest as ingest_service
from app.services.runtime import Elephant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ is not installed

from benchmarks.common import write_locomo_smoke_sample

DEFAULT_DATASET = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo10.json"
T = TypeVar("T")


class Stopwatch:
    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0

    def wrap(self, func: Callable[..., T]) -> Callable[..., T]:
        def timed(*args: Any, **kwargs: Any) -> T:
            started = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started
                self.calls += 1

        return timed


class TimedEmbedder:
    def __init__(self, inner: Embedder, watch: Stopwatch) -> None:
        self.model_name = inner.model_name
        self.dim = inner.dim
        self.texts = 0
        self._inner = inner
        self._watch = watch

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.texts += len(texts)
        return self._watch.wrap(self._inner.embed_documents)(texts)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._watch.wrap(self._inner.embed_queries)(texts)


def count(elephant: Elephant, tenants: list[str], table: str) -> int:
    total = 0
    for tenant in tenants:
        with elephant.db.tenant(tenant) as conn:
            row = conn.execute(
                sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
            ).fetchone()
            total += int(row[0]) if row else 0
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--limit", type=int, default=None, help="Only the first N conversations.")
    parser.add_argument(
        "--smoke", action="store_true", help="two sessions of one conversation, in seconds"
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/ingest.json"))
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="elephant-ingest-") as tmp:
        dataset, source = args.dataset, str(args.dataset)
        if args.smoke:
            dataset, source = write_locomo_smoke_sample(args.dataset, Path(tmp))
        items = ingest_service.read_items(dataset, "locomo", "locomo", split_tenants=True)
        tenants = list(dict.fromkeys(item.tenant for item in items))[: args.limit]
        items = [item for item in items if item.tenant in tenants]
        data_dir = str(Path(tmp) / "data")
        settings = Settings.model_validate({"data_dir": data_dir, "log": {"level": "WARNING"}})
        embed_watch, extract_watch = Stopwatch(), Stopwatch()
        started = time.perf_counter()
        embedder = TimedEmbedder(build_embedder(settings.embedding), embed_watch)
        elephant = Elephant.open(settings, embedder=embedder, use_llm_from_settings=False)
        open_s = time.perf_counter() - started
        pipeline.extract_offline = extract_watch.wrap(pipeline.extract_offline)  # type: ignore[assignment]
        try:
            t0 = time.perf_counter()
            report = ingest_service.ingest(elephant, items)
            commit_s = time.perf_counter() - t0
            commit_embed_s = embed_watch.seconds
            windows_embedded = embedder.texts
            t1 = time.perf_counter()
            jobs = drain(elephant)
            extract_s = time.perf_counter() - t1
            facts = count(elephant, tenants, "facts")
            contradictions = count(elephant, tenants, "contradictions")
        finally:
            elephant.close()

    total_s = commit_s + extract_s
    embed_s = embed_watch.seconds
    offline_s = extract_watch.seconds
    rest_s = total_s - embed_s - offline_s
    result = {
        "smoke": args.smoke,
        "dataset": source,
        "conversations": len(tenants),
        "sessions": report.conversations,
        "turns": report.turns,
        "windows": {
            "embedded": windows_embedded,
            "stored": report.windows_stored,
            "rejected": report.rejected,
            "duplicates": report.duplicates,
        },
        "facts": facts,
        "contradictions": contradictions,
        "jobs": jobs,
        "seconds": {
            "open": round(open_s, 2),
            "commit_phase": round(commit_s, 2),
            "extract_phase": round(extract_s, 2),
            "total": round(total_s, 2),
            "embedding": round(embed_s, 2),
            "embedding_commit_phase": round(commit_embed_s, 2),
            "offline_extraction": round(offline_s, 2),
            "database_and_pipeline": round(rest_s, 2),
        },
        "throughput_per_s": {
            "turns": round(report.turns / total_s, 1),
            "windows": round(report.windows_stored / commit_s, 1),
            "facts": round(facts / extract_s, 1) if extract_s else None,
        },
        "share_of_total": {
            "embedding": round(embed_s / total_s, 3),
            "offline_extraction": round(offline_s / total_s, 3),
            "database_and_pipeline": round(rest_s / total_s, 3),
        },
        "overhead_vs_embedding": round(rest_s / embed_s, 3),
        "target_overhead_vs_embedding": 0.2,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    seconds = result["seconds"]
    print(f"{len(tenants)} conversations, {report.conversations} sessions, {report.turns} turns")
    print(f"{'phase':<28}{'seconds':>10}")
    for key, value in seconds.items():  # type: ignore[union-attr]
        print(f"{key:<28}{value:>10}")
    print(
        f"turns/s {result['throughput_per_s']['turns']}  "  # type: ignore[index]
        f"windows/s {result['throughput_per_s']['windows']}  "  # type: ignore[index]
        f"facts/s {result['throughput_per_s']['facts']}"
    )  # type: ignore[index]
    print(f"windows stored {report.windows_stored}, facts {facts}, contradictions {contradictions}")
    print(f"database+pipeline / embedding = {result['overhead_vs_embedding']} (target <= 0.2)")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
