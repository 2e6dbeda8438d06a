"""End-to-end search latency with reranking on vs off.

    .venv/bin/python benchmarks/rerank_search.py [--model PATH] [--queries 50] [--notes 300]
        [--smoke] [--out benchmarks/results/rerank_search.json]

A fresh embedded database gets --notes synthetic notes through the real write path
(local MiniLM embedder, offline gate); a reranker_server is started on
127.0.0.1 with --model (default: the tiny random cross-encoder of
tests/reranker_helpers.py, which measures the pipeline, not a real model), and the
same queries run through search() with reranking off and on (pool 70, limit 10).
"reranked" counts the searches the reranker really reordered (not a fallback to
RRF). `--smoke`: the tiny cross-encoder, 30 notes, 5 queries.
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.config import Settings  # noqa: E402
from app.services.memory.commit import NoteIn, commit_note  # noqa: E402
from app.services.retrieval.schemas import SearchRequest  # noqa: E402
from app.services.retrieval.search import search  # noqa: E402
from app.services.runtime import Elephant  # noqa: E402
from tests.reranker_helpers import build_tiny_cross_encoder  # noqa: E402

PEOPLE = ["Ada", "Bram", "Chidi", "Dana", "Emil", "Farah", "Goran", "Hana"]
THINGS = ["violin", "marathon", "sourdough", "chess club", "garden", "kayak", "novel", "pottery"]
PLACES = ["Lisbon", "Oslo", "Leeds", "Kyoto", "Denver", "Accra", "Lyon", "Perth"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_healthy(server: subprocess.Popen[bytes], url: str, timeout_s: float = 120) -> None:
    """Bounded: a reranker server that exits or never answers stops the benchmark."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the reranker server exited with {server.returncode}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the reranker server at {url} not healthy within {timeout_s} s")


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), 2),
        "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument(
        "--smoke", action="store_true", help="tiny cross-encoder, 30 notes, 5 queries"
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/rerank_search.json"))
    args = parser.parse_args()
    if args.smoke:
        args.model, args.notes, args.queries = None, 30, 5
    rng = random.Random(3)
    with tempfile.TemporaryDirectory(prefix="elephant-rerank-") as tmp:
        model = args.model or build_tiny_cross_encoder(Path(tmp) / "tiny-ce")
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "reranker_server", "--model", str(model), "--port", str(port)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            url = f"http://127.0.0.1:{port}"  # it loads while the notes are committed
            settings = Settings.model_validate(
                {
                    "data_dir": str(Path(tmp) / "data"),
                    "log": {"level": "WARNING"},
                    "reranker": {"enabled": True, "url": url, "timeout_s": 10},
                }
            )
            elephant = Elephant.open(settings, use_llm_from_settings=False)
            try:
                for n in range(args.notes):
                    who, what, where = rng.choice(PEOPLE), rng.choice(THINGS), rng.choice(PLACES)
                    text = f"{who} took up {what} in {where} in {2015 + n % 10} (note {n})"
                    commit_note(elephant, "bench", NoteIn(text=text, force=True))
                queries = [
                    f"When did {rng.choice(PEOPLE)} start {rng.choice(THINGS)}?"
                    for _ in range(args.queries)
                ]
                timings: dict[str, list[float]] = {"off": [], "on": []}
                reranked = 0
                wait_healthy(server, url)
                for query in queries[:5]:  # warm-up
                    search(elephant, "bench", SearchRequest(query=query, rerank=True))
                for query in queries:
                    for mode in ("off", "on"):
                        started = time.perf_counter()
                        result = search(
                            elephant,
                            "bench",
                            SearchRequest(query=query, limit=10, rerank=mode == "on"),
                            record_access=False,
                        )
                        timings[mode].append((time.perf_counter() - started) * 1000)
                        if mode == "on" and result.hits:
                            reranked += result.hits[0].rerank_score is not None
            finally:
                elephant.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    report = {
        "smoke": args.smoke,
        "model": str(args.model or "tiny random cross-encoder"),
        "notes": args.notes,
        "queries": args.queries,
        "reranked": reranked,
        "pool": 70,
        "search_ms": {mode: percentiles(values) for mode, values in timings.items()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"{'reranking':<10}{'p50 ms':>10}{'p95 ms':>10}")
    for mode, stats in report["search_ms"].items():  # type: ignore[union-attr]
        print(f"{mode:<10}{stats['p50']:>10}{stats['p95']:>10}")
    print(f"reranked {reranked} of {args.queries} searches with reranking on")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
