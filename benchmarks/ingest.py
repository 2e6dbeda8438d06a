"""Ingest throughput on LoCoMo with the offline providers.

    .venv/bin/python benchmarks/ingest.py [--dataset ../shared/datasets/locomo10.json]
        [--limit N] [--smoke] [--compare] [--long-turns 400] [--repeats 2]
        [--out benchmarks/results/ingest.json]

Each LoCoMo conversation goes into its own tenant of a fresh embedded database
(a temporary data dir), through the real write path: commit_conversation per
session (windows, gate, dedup), then the extraction jobs (offline extractor,
fact embedding, contradiction checks). Reports turns/s, windows/s, facts/s and
where the time went: embedding (inside the embedder), offline extraction
(Python heuristics) and the rest (database round trips and pipeline glue).
Target: that rest at most 20% of the embedding time.

Then one long conversation (--long-turns, default 400, LoCoMo's turns in order) is
committed in a single call into a fresh tenant, --repeats times (extraction queued, not
run): the time of that commit.

`--compare` runs the same work under two configurations interleaved in one run, each on
its own database: "before" (embedding.runtime = torch, embedding.window_vectors = model:
every window read again by the model, as before issue 30) and "after" (the product's
defaults: onnxruntime, windows pooled from their turns). Conversation by conversation
they alternate which goes first, so a busier minute costs both. The load average is
recorded with the numbers.

`--smoke` ingests the first conversation's first two sessions (a synthetic
LoCoMo-shaped conversation when the dataset is absent) the same way, in seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from psycopg import sql

from app.config import Settings
from app.providers.embedder import Embedder, TokenSums, Vectors, build_embedder
from app.providers.encoders import Pooled
from app.services.facts import pipeline
from app.services.jobs.runner import drain
from app.services.memory import ingest as ingest_service
from app.services.memory.commit import commit_conversation
from app.services.memory.schemas import ConversationIn
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
    """The product's embedder, timed: every call's seconds and texts (what the model read)."""

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

    def embed_document_sums(self, texts: Sequence[str]) -> Pooled:
        assert isinstance(self._inner, TokenSums)
        self.texts += len(texts)
        return self._watch.wrap(self._inner.embed_document_sums)(texts)


def count(elephant: Elephant, tenants: list[str], table: str) -> int:
    total = 0
    for tenant in tenants:
        with elephant.db.tenant(tenant) as conn:
            row = conn.execute(
                sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
            ).fetchone()
            total += int(row[0]) if row else 0
    return total


CONFIGS: dict[str, dict[str, Any]] = {
    "before": {"runtime": "torch", "window_vectors": "model"},
    "after": {},  # the product's defaults
}


class Run:
    """One configuration on its own database, fed conversation by conversation."""

    def __init__(self, name: str, embedding: dict[str, Any], data_dir: Path) -> None:
        self.name = name
        settings = Settings.model_validate(
            {"data_dir": str(data_dir), "log": {"level": "WARNING"}, "embedding": embedding}
        )
        self.embed_watch, self.extract_watch = Stopwatch(), Stopwatch()
        started = time.perf_counter()
        inner = build_embedder(settings.embedding)
        inner.embed_queries(["warm up"])  # the model loaded before any timing
        self.load_s = time.perf_counter() - started
        self.embedder = TimedEmbedder(inner, self.embed_watch)
        self.elephant = Elephant.open(settings, embedder=self.embedder, use_llm_from_settings=False)
        self.open_s = time.perf_counter() - started
        self.commit_s = self.extract_s = self.commit_embed_s = 0.0
        self.report = ingest_service.IngestReport()
        self.jobs = 0
        self.tenants: list[str] = []
        self.long_commits: list[float] = []
        self.long_embed: list[float] = []

    def ingest(self, items: list[ingest_service.Item]) -> None:
        before = self.embed_watch.seconds
        t0 = time.perf_counter()
        report = ingest_service.ingest(self.elephant, items)
        self.commit_s += time.perf_counter() - t0
        self.commit_embed_s += self.embed_watch.seconds - before
        for key in ("conversations", "turns", "windows_stored", "rejected", "duplicates"):
            setattr(self.report, key, getattr(self.report, key) + getattr(report, key))
        self.tenants += [t for t in report.tenants if t not in self.tenants]
        t1 = time.perf_counter()
        self.jobs += drain(self.elephant)
        self.extract_s += time.perf_counter() - t1

    def long_commit(self, conversation: ConversationIn, tenant: str) -> None:
        before = self.embed_watch.seconds
        t0 = time.perf_counter()
        commit_conversation(self.elephant, tenant, conversation)
        self.long_commits.append(time.perf_counter() - t0)
        self.long_embed.append(self.embed_watch.seconds - before)

    def result(self) -> dict[str, Any]:
        facts = count(self.elephant, self.tenants, "facts")
        contradictions = count(self.elephant, self.tenants, "contradictions")
        total_s = self.commit_s + self.extract_s
        embed_s = self.embed_watch.seconds - sum(self.long_embed)
        offline_s = self.extract_watch.seconds
        rest_s = total_s - embed_s - offline_s
        report = self.report
        return {
            "embedding_settings": CONFIGS.get(self.name, {}) or "defaults",
            "conversations": len(self.tenants),
            "sessions": report.conversations,
            "turns": report.turns,
            "windows": {
                "texts_embedded": self.embedder.texts,
                "stored": report.windows_stored,
                "rejected": report.rejected,
                "duplicates": report.duplicates,
            },
            "facts": facts,
            "contradictions": contradictions,
            "jobs": self.jobs,
            "seconds": {
                "model_load": round(self.load_s, 2),
                "open": round(self.open_s, 2),
                "commit_phase": round(self.commit_s, 2),
                "extract_phase": round(self.extract_s, 2),
                "total": round(total_s, 2),
                "embedding": round(embed_s, 2),
                "embedding_commit_phase": round(self.commit_embed_s, 2),
                "offline_extraction": round(offline_s, 2),
                "database_and_pipeline": round(rest_s, 2),
            },
            "throughput_per_s": {
                "turns": round(report.turns / total_s, 1),
                "commits": round(report.conversations / total_s, 2),
                "windows": round(report.windows_stored / self.commit_s, 1),
                "facts": round(facts / self.extract_s, 1) if self.extract_s else None,
            },
            "share_of_total": {
                "embedding": round(embed_s / total_s, 3),
                "offline_extraction": round(offline_s / total_s, 3),
                "database_and_pipeline": round(rest_s / total_s, 3),
            },
            "long_commit": {
                "turns": LONG_TURNS[0],
                "seconds": [round(x, 2) for x in self.long_commits],
                "embedding_seconds": [round(x, 2) for x in self.long_embed],
            },
        }


LONG_TURNS = [400]


def long_conversation(
    dataset: Path, turns: int, conversation_id: str, skip: int = 0
) -> ConversationIn | None:
    """LoCoMo's turns in order, across sessions and conversations, as one conversation;
    ``skip`` turns from the start first (each repeat its own texts: the embedder's cache
    of recent texts must not answer a repeat)."""
    collected: list[dict[str, Any]] = []
    for sample in json.loads(dataset.read_text()):
        for _number, session, _date in ingest_service.locomo_sessions(sample):
            collected += [{"speaker": t["speaker"], "text": t["text"]} for t in session]
    if not collected:
        return None
    while len(collected) < skip + turns:
        collected += [{**t, "text": f"{t['text']} (again)"} for t in collected]
    return ConversationIn.model_validate(
        {
            "conversation_id": conversation_id,
            "session_date": "2024-01-01T10:00:00Z",
            "turns": collected[skip : skip + turns],
            "force": True,
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--limit", type=int, default=None, help="Only the first N conversations.")
    parser.add_argument(
        "--smoke", action="store_true", help="two sessions of one conversation, in seconds"
    )
    parser.add_argument("--compare", action="store_true", help="before vs after, interleaved")
    parser.add_argument("--long-turns", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=2, help="long commits per configuration")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/ingest.json"))
    args = parser.parse_args()
    LONG_TURNS[0] = args.long_turns
    names = ["before", "after"] if args.compare else ["after"]

    with tempfile.TemporaryDirectory(prefix="elephant-ingest-") as tmp:
        dataset, source = args.dataset, str(args.dataset)
        if args.smoke:
            dataset, source = write_locomo_smoke_sample(args.dataset, Path(tmp))
        items = ingest_service.read_items(dataset, "locomo", "locomo", split_tenants=True)
        tenants = list(dict.fromkeys(item.tenant for item in items))[: args.limit]
        items = [item for item in items if item.tenant in tenants]
        runs = {name: Run(name, CONFIGS[name], Path(tmp) / name) for name in names}
        extract = pipeline.extract_offline
        load: list[tuple[float, float, float]] = [os.getloadavg()]
        try:
            for index, tenant in enumerate(tenants):
                mine = [item for item in items if item.tenant == tenant]
                for name in names if index % 2 == 0 else names[::-1]:
                    run = runs[name]
                    pipeline.extract_offline = run.extract_watch.wrap(extract)  # type: ignore[assignment]
                    run.ingest(mine)
                load.append(os.getloadavg())
                print(f"  {tenant}: {len(mine)} sessions", flush=True)
            for repeat in range(args.repeats):
                long = long_conversation(
                    dataset, args.long_turns, "long", skip=repeat * args.long_turns
                )
                for name in (names if repeat % 2 == 0 else names[::-1]) if long else []:
                    assert long is not None
                    runs[name].long_commit(long, f"long-{repeat}")
            load.append(os.getloadavg())
            results = {name: run.result() for name, run in runs.items()}
        finally:
            pipeline.extract_offline = extract  # type: ignore[assignment]
            for run in runs.values():
                run.elephant.close()

    result: dict[str, Any] = {
        "smoke": args.smoke,
        "dataset": source,
        "interleaved": args.compare,
        "load_average_1m": [round(x[0], 2) for x in load],
        "cpus": os.cpu_count(),
        **({"runs": results} if args.compare else results["after"]),
    }
    if args.compare:
        before, after = results["before"], results["after"]
        result["speedup"] = {
            "end_to_end": round(before["seconds"]["total"] / after["seconds"]["total"], 2),
            "commit_phase": round(
                before["seconds"]["commit_phase"] / after["seconds"]["commit_phase"], 2
            ),
            "embedding": round(before["seconds"]["embedding"] / after["seconds"]["embedding"], 2),
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print_table(results)
    if args.compare:
        print(f"speedup after/before: {result['speedup']}")
    print(f"load average (1 min) over the run: {result['load_average_1m']}")
    print(f"written to {args.out}")


def print_table(results: dict[str, dict[str, Any]]) -> None:
    names = list(results)
    rows: list[tuple[str, list[Any]]] = [
        ("turns", [r["turns"] for r in results.values()]),
        ("sessions (commits)", [r["sessions"] for r in results.values()]),
        ("texts the model read", [r["windows"]["texts_embedded"] for r in results.values()]),
        ("windows stored", [r["windows"]["stored"] for r in results.values()]),
        ("facts", [r["facts"] for r in results.values()]),
    ]
    for key in results[names[0]]["seconds"]:
        rows.append((f"{key} s", [r["seconds"][key] for r in results.values()]))
    for key in ("turns", "commits", "windows", "facts"):
        rows.append((f"{key}/s", [r["throughput_per_s"][key] for r in results.values()]))
    rows.append(("model share", [r["share_of_total"]["embedding"] for r in results.values()]))
    rows.append(
        (
            f"{LONG_TURNS[0]}-turn commit s",
            [r["long_commit"]["seconds"] for r in results.values()],
        )
    )
    print("| | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for label, values in rows:
        print(f"| {label} | " + " | ".join(str(v) for v in values) + " |")


if __name__ == "__main__":
    main()
