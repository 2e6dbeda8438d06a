"""The embedder alone: runtimes, threads and batch shapes, on LoCoMo's texts.

    .venv/bin/python benchmarks/embedding.py [--dataset ../shared/datasets/locomo10.json]
        [--turns 1200] [--queries 300] [--rounds 3] [--smoke]
        [--out benchmarks/results/embedding.json]

What the defaults of embedding.threads, embedding.batch_size and embedding.batch_tokens
are chosen by. Every configuration embeds the same texts, with the cache off, in rounds
that rotate the order of the configurations (a busier minute costs them all):

- turns: LoCoMo turns as the commit path sends them ("[date] Speaker: text"), in the
  commits' own batches (one LoCoMo session a call), texts per second;
- windows: the same turns as 5-turn windows (stride 2), what embedding.window_vectors =
  model reads on top of the turns;
- queries: LoCoMo questions one at a time, p50 / p95 ms (what a search waits for);
- two processes: two processes embedding turns at once with threads = 1 each, against
  one process with threads = 2 (the worker beside the API), texts per second in total.

The load average is recorded before and after. Runtime torch is measured too (with its
own default threads) as the reference.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from app.config import EmbeddingSettings
from app.providers.embedder import LocalEmbedder
from app.services.memory import ingest as ingest_service

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ is not installed

DEFAULT_DATASET = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo10.json"

CONFIGS: dict[str, dict[str, Any]] = {
    "torch": {"runtime": "torch"},
    "onnx t1 b32 8k": {"threads": 1},
    "onnx t2 b16 4k": {"threads": 2, "batch_size": 16, "batch_tokens": 4096},
    "onnx t2 b32 8k": {"threads": 2},
    "onnx t2 b64 16k": {"threads": 2, "batch_size": 64, "batch_tokens": 16384},
    "onnx t2 b128 32k": {"threads": 2, "batch_size": 128, "batch_tokens": 32768},
}


def texts(dataset: Path, turns: int, queries: int) -> tuple[list[list[str]], list[str]]:
    """Sessions of rendered turns (up to ``turns`` in all) and questions."""
    samples = json.loads(dataset.read_text())
    sessions: list[list[str]] = []
    total = 0
    for sample in samples:
        for _number, session, date in ingest_service.locomo_sessions(sample):
            rendered = [f"[{date}] {t['speaker']}: {t['text']}" for t in session]
            sessions.append(rendered[: turns - total])
            total += len(sessions[-1])
            if total >= turns:
                break
        if total >= turns:
            break
    questions = [str(q["question"]) for sample in samples for q in sample["qa"]][:queries]
    return sessions, questions


def windows_of(session: list[str]) -> list[str]:
    starts = list(range(0, max(len(session) - 5, 0) + 1, 2))
    return ["\n".join(session[i : i + 5]) for i in starts]


def build(config: dict[str, Any]) -> LocalEmbedder:
    embedder = LocalEmbedder(EmbeddingSettings(cache_size=0, **config))
    embedder.embed_queries(["warm up"])
    return embedder


def per_second(embedder: LocalEmbedder, batches: list[list[str]]) -> float:
    started = time.perf_counter()
    for batch in batches:
        embedder.embed_documents(batch)
    return sum(len(b) for b in batches) / (time.perf_counter() - started)


def query_ms(embedder: LocalEmbedder, questions: list[str]) -> list[float]:
    times = []
    for question in questions:
        started = time.perf_counter()
        embedder.embed_queries([question])
        times.append((time.perf_counter() - started) * 1000)
    return times


def _child(config: dict[str, Any], batches: list[list[str]], start: Any, out: Any) -> None:
    embedder = build(config)
    start.wait()
    out.put(per_second(embedder, batches))


def two_processes(batches: list[list[str]]) -> float:
    """Turns per second in total with two processes of one thread each, at once."""
    context = multiprocessing.get_context("spawn")
    start, out = context.Barrier(3), context.Queue()
    children = [
        context.Process(target=_child, args=({"threads": 1}, batches, start, out)) for _ in range(2)
    ]
    for child in children:
        child.start()
    start.wait()
    started = time.perf_counter()
    rates = [out.get(timeout=600) for _ in children]
    elapsed = time.perf_counter() - started
    for child in children:
        child.join()
    del rates
    return 2 * sum(len(b) for b in batches) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--turns", type=int, default=1200)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="few texts, one round")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/embedding.json"))
    args = parser.parse_args()
    if args.smoke:
        args.turns, args.queries, args.rounds = 60, 20, 1
    sessions, questions = texts(args.dataset, args.turns, args.queries)
    windows = [windows_of(session) for session in sessions]
    load = [os.getloadavg()[0]]
    embedders = {name: build(config) for name, config in CONFIGS.items()}
    found: dict[str, dict[str, list[float]]] = {
        name: {"turns": [], "windows": [], "queries": []} for name in CONFIGS
    }
    names = list(CONFIGS)
    for round_ in range(args.rounds):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        for name in order:
            embedder = embedders[name]
            found[name]["turns"].append(per_second(embedder, sessions))
            found[name]["windows"].append(per_second(embedder, windows))
            found[name]["queries"] += query_ms(embedder, questions)
        load.append(os.getloadavg()[0])
        print(f"round {round_ + 1}/{args.rounds} done (load {load[-1]:.2f})", flush=True)
    del embedders
    one_process = per_second(build({"threads": 2}), sessions)
    both = two_processes(sessions)
    load.append(os.getloadavg()[0])

    table: dict[str, dict[str, float]] = {}
    for name, values in found.items():
        ordered = sorted(values["queries"])
        table[name] = {
            "turns_per_s": round(statistics.median(values["turns"]), 1),
            "windows_per_s": round(statistics.median(values["windows"]), 1),
            "query_p50_ms": round(statistics.median(ordered), 2),
            "query_p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 2),
        }
    result = {
        "smoke": args.smoke,
        "turns": sum(len(s) for s in sessions),
        "windows": sum(len(w) for w in windows),
        "queries": len(questions),
        "rounds": args.rounds,
        "cpus": os.cpu_count(),
        "load_average_1m": [round(x, 2) for x in load],
        "configurations": {name: CONFIGS[name] for name in CONFIGS},
        "results": table,
        "processes": {
            "one_process_threads_2_turns_per_s": round(one_process, 1),
            "two_processes_threads_1_turns_per_s": round(both, 1),
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print("| configuration | turns/s | windows/s | query p50 ms | query p95 ms |")
    print("|---|---|---|---|---|")
    for name, row in table.items():
        print(
            f"| {name} | {row['turns_per_s']} | {row['windows_per_s']} | "
            f"{row['query_p50_ms']} | {row['query_p95_ms']} |"
        )
    print(
        f"turns/s, one process of 2 threads: {one_process:.1f}; "
        f"two processes of 1 thread at once: {both:.1f}"
    )
    print(f"load average (1 min): {result['load_average_1m']}")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
