"""Reranker throughput and latency per 70-candidate request (CPU unless CUDA is present).

    .venv/bin/python benchmarks/rerank.py [--model PATH] [--requests 20] [--candidates 70]
        [--smoke] [--out benchmarks/results/rerank.json]

Without --model it measures tiny random models (a Qwen3-style causal LM and a
BERT cross-encoder, built offline into a temp dir): that measures the service's
overhead, not a real model's speed. With --model it also measures that model.
Each model is served for real by uvicorn on 127.0.0.1; "direct" times
Reranker.score alone, "http" times POST /rerank end to end. `--smoke`: the tiny
models only, 3 requests of 8 candidates.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import socket
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import uvicorn

# reranker_server is not part of the installed package: import it from the checkout.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reranker_server.app import create_app
from reranker_server.scoring import Reranker
from tests.reranker_helpers import WORDS, build_tiny_causal, build_tiny_cross_encoder

QUERY = "where is the capital of france and which river runs through the city"


def documents(count: int, seed: int = 0) -> list[str]:
    """``count`` pseudo-documents of 20-120 words, seeded."""
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(20, 120))) for _ in range(count)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def summarise(seconds: list[float], pairs: int) -> dict[str, float]:
    ordered = sorted(seconds)
    return {
        "p50_ms": statistics.median(ordered) * 1000,
        "p95_ms": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] * 1000,
        "mean_ms": statistics.fmean(ordered) * 1000,
        "pairs_per_s": pairs / statistics.fmean(ordered),
    }


def time_direct(reranker: Reranker, docs: list[str], requests: int) -> list[float]:
    """Seconds per Reranker.score call, after a warm-up."""
    for _ in range(3):
        reranker.score(QUERY, docs)
    seconds = []
    for _ in range(requests):
        started = time.perf_counter()
        reranker.score(QUERY, docs)
        seconds.append(time.perf_counter() - started)
    return seconds


def measure(name: str, model: str, requests: int, candidates: int) -> dict[str, Any]:
    """Direct and HTTP timings for one model."""
    reranker = Reranker(model)
    docs = documents(candidates)
    # Like the server, score in a worker thread: on a busy host torch's intra-op
    # pool in the main thread stalls and makes the numbers noisy.
    with ThreadPoolExecutor(max_workers=1) as pool:
        direct = pool.submit(time_direct, reranker, docs, requests).result()
    port = free_port()
    config = uvicorn.Config(create_app(reranker), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:  # bounded: a server that failed to bind never starts
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the reranker server on port {port} did not start")
        time.sleep(0.02)
    http = []
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600) as client:
        client.post("/rerank", json={"query": QUERY, "documents": docs}).raise_for_status()
        for _ in range(requests):
            started = time.perf_counter()
            client.post("/rerank", json={"query": QUERY, "documents": docs}).raise_for_status()
            http.append(time.perf_counter() - started)
    server.should_exit = True
    thread.join(timeout=10)
    info = reranker.info
    return {
        "name": name,
        "model": model,
        "kind": info.kind,
        "device": info.device,
        "candidates": candidates,
        "requests": requests,
        "direct": summarise(direct, candidates),
        "http": summarise(http, candidates),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a real model (local path or hub id) to measure too")
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--candidates", type=int, default=70)
    parser.add_argument(
        "--smoke", action="store_true", help="tiny models only, 3 requests of 8 candidates"
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/rerank.json"))
    args = parser.parse_args()
    if args.smoke:
        args.model, args.requests, args.candidates = None, 3, 8
    logging.getLogger("httpx").setLevel(logging.WARNING)
    rows = []
    with tempfile.TemporaryDirectory(prefix="elephant-rerank-") as tmp:
        causal = build_tiny_causal(Path(tmp) / "causal")
        cross = build_tiny_cross_encoder(Path(tmp) / "cross")
        rows.append(measure("tiny-causal", str(causal), args.requests, args.candidates))
        rows.append(measure("tiny-cross-encoder", str(cross), args.requests, args.candidates))
    if args.model:
        rows.append(measure("model", args.model, args.requests, args.candidates))
    header = f"{'model':<20}{'kind':<15}{'device':<8}{'mode':<8}"
    header += f"{'p50 ms':>10}{'p95 ms':>10}{'pairs/s':>10}"
    print(header)
    for row in rows:
        for mode in ("direct", "http"):
            stats = row[mode]
            print(
                f"{row['name']:<20}{row['kind']:<15}{row['device']:<8}{mode:<8}"
                f"{stats['p50_ms']:>10.1f}{stats['p95_ms']:>10.1f}{stats['pairs_per_s']:>10.0f}"
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"smoke": args.smoke, "results": rows}, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
