"""What access control costs per request: the key lookup, and a cheap endpoint over HTTP
with API keys against the keyless local mode.

    .venv/bin/python benchmarks/auth.py [--requests 500] [--smoke] [--out results/auth.json]

A fresh embedded database in a temporary data dir; uvicorn on 127.0.0.1; one
httpx client (keep-alive) sending `GET /contradictions?limit=1` (one small
indexed query), so the difference between the two modes is the access path:
Host and origin checks, the key check (`elephant_verify_key`), scope, rate
bucket. `--smoke` runs 20 requests (seconds; the test suite runs it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from app.api import create_app
from app.config import Settings
from app.db import Database
from app.protocol import TENANT_HEADER
from app.services.access.auth import authenticate
from app.services.access.keys import KeyIn, create_key
from app.services.runtime import Elephant


class NoEmbedder:
    """The endpoint measured embeds nothing; loading the model would only slow start-up."""

    model_name = "none"
    dim = 384

    def embed_documents(self, texts: Sequence[str]) -> Any:
        raise RuntimeError("not used by this benchmark")

    def embed_queries(self, texts: Sequence[str]) -> Any:
        raise RuntimeError("not used by this benchmark")


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 3),
    }


@contextmanager
def served(settings: Settings, elephant: Elephant) -> Iterator[str]:
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(settings, elephant), host="127.0.0.1", port=port, log_level="warning"
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def timed_requests(base: str, headers: dict[str, str], n: int) -> list[float]:
    samples = []
    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        for _ in range(5):  # warm-up: connections, caches
            client.get("/contradictions", params={"limit": 1}).raise_for_status()
        for _ in range(n):
            started = time.perf_counter()
            client.get("/contradictions", params={"limit": 1}).raise_for_status()
            samples.append(time.perf_counter() - started)
    return samples


def run(requests: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="elephant-auth-") as tmp:
        base = {"data_dir": tmp, "worker": {"enabled": False}}
        keyed = Settings.model_validate(base)
        local = Settings.model_validate({**base, "auth": {"mode": "local"}})
        db = Database(keyed)
        db.open()
        try:
            key = create_key(db, KeyIn(tenant="bench", scopes=["read"], name="bench")).key
            lookups = []
            for _ in range(requests):
                started = time.perf_counter()
                authenticate(db, key)
                lookups.append(time.perf_counter() - started)
            results: dict[str, Any] = {"requests": requests, "key_lookup": percentiles(lookups)}
            for label, settings, headers in (
                ("keys", keyed, {"Authorization": f"Bearer {key}"}),
                ("local", local, {TENANT_HEADER: "bench"}),
            ):
                elephant = Elephant(settings=settings, db=db, embedder=NoEmbedder(), llm=None)
                with served(settings, elephant) as url:
                    results[label] = percentiles(timed_requests(url, headers, requests))
            results["overhead_p50_ms"] = round(
                results["keys"]["p50_ms"] - results["local"]["p50_ms"], 3
            )
            return results
        finally:
            db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--smoke", action="store_true", help="20 requests, for the test suite")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/auth.json"))
    args = parser.parse_args()
    results = run(20 if args.smoke else args.requests)
    lookup = results["key_lookup"]
    print(f"key lookup            p50 {lookup['p50_ms']:.2f} ms  p95 {lookup['p95_ms']:.2f} ms")
    for label in ("keys", "local"):
        got = results[label]
        print(
            f"GET /contradictions   {label:5} p50 {got['p50_ms']:.2f} ms"
            f"  p95 {got['p95_ms']:.2f} ms"
        )
    print(f"access control adds   p50 {results['overhead_p50_ms']:.2f} ms per request")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"smoke": args.smoke, **results}, indent=2))


if __name__ == "__main__":
    main()
