"""Load: N writers and N readers against a real `elephant serve` for a fixed time.

    .venv/bin/python benchmarks/load.py [--clients 8] [--seconds 60] [--smoke]
                                        [--out benchmarks/results/load.json]

A fresh embedded database in a temporary data dir, the server in its own process
(keyless local mode on 127.0.0.1, the in-process worker extracting facts).
Writers commit distinct notes (POST /commit), readers search (GET /search).
Prints throughput and p50/p95/p99 per operation, errors by status, the server's
RSS before and after, and checks that every acknowledged write (201) is in the
database afterwards.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import psutil

from app.config import Settings
from app.db import Database

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ is not installed

from benchmarks.common import note, percentiles, served

QUERIES = [
    "When was the greenhouse roof repaired?", "Who booked violin lessons?",
    "What happened in Lisbon?", "solar panels", "Which payments were made in May 2023?",
    "Kenji's cat", "What did Priya organise?", "chess tournament in Tartu",
]  # fmt: skip


def writer(url: str, seed: int, stop: threading.Event, out: dict[str, Any]) -> None:
    rng = random.Random(seed)
    with httpx.Client(base_url=url, timeout=60) as client:
        n = 0
        while not stop.is_set():
            n += 1
            started = time.perf_counter()
            try:
                response = client.post("/commit", json={"text": note(rng, seed * 100000 + n)})
            except httpx.HTTPError as exc:
                out["errors"][type(exc).__name__] += 1
                continue
            out["commit"].append(time.perf_counter() - started)
            out["status"][f"commit {response.status_code}"] += 1
            if response.status_code == 201:
                out["acknowledged"].append(response.json()["memory_id"])


def reader(url: str, seed: int, stop: threading.Event, out: dict[str, Any]) -> None:
    rng = random.Random(seed)
    with httpx.Client(base_url=url, timeout=60) as client:
        while not stop.is_set():
            started = time.perf_counter()
            try:
                response = client.get("/search", params={"q": rng.choice(QUERIES), "limit": 10})
            except httpx.HTTPError as exc:
                out["errors"][type(exc).__name__] += 1
                continue
            out["search"].append(time.perf_counter() - started)
            out["status"][f"search {response.status_code}"] += 1


def present(data_dir: Path, ids: list[str]) -> int:
    db = Database(Settings.model_validate({"data_dir": str(data_dir)}))
    db.open()
    try:
        with db.tenant("default") as conn:
            row = conn.execute(
                "SELECT count(*) FROM memories WHERE id = ANY(%s::uuid[])", (ids,)
            ).fetchone()
        return int(row[0]) if row else 0
    finally:
        db.close()


def run(clients: int, seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="elephant-load-") as tmp:
        data_dir = Path(tmp)
        out: dict[str, Any] = {
            "commit": [], "search": [], "acknowledged": [],
            "status": Counter(), "errors": Counter(),
        }  # fmt: skip
        with served(data_dir) as server:
            process = psutil.Process(server.proc.pid)
            rss_before = process.memory_info().rss
            stop = threading.Event()
            threads = [
                threading.Thread(target=writer, args=(server.url, i + 1, stop, out))
                for i in range(clients)
            ] + [
                threading.Thread(target=reader, args=(server.url, i + 1, stop, out))
                for i in range(clients)
            ]
            started = time.monotonic()
            for thread in threads:
                thread.start()
            time.sleep(seconds)
            stop.set()
            for thread in threads:
                thread.join(timeout=120)
            elapsed = time.monotonic() - started
            rss_after = process.memory_info().rss
        acknowledged = out["acknowledged"]
        found = present(data_dir, acknowledged)
        return {
            "clients": {"writers": clients, "readers": clients},
            "seconds": round(elapsed, 1),
            "commit": {
                **percentiles(out["commit"]),
                "per_s": round(len(out["commit"]) / elapsed, 1),
            },
            "search": {
                **percentiles(out["search"]),
                "per_s": round(len(out["search"]) / elapsed, 1),
            },
            "status": dict(out["status"]),
            "errors": dict(out["errors"]),
            "rss_mb": {"before": rss_before // 2**20, "after": rss_after // 2**20},
            "acknowledged": len(acknowledged),
            "acknowledged_present": found,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=8, help="writers, and as many readers")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--smoke", action="store_true", help="2+2 clients for 3 s")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/load.json"))
    args = parser.parse_args()
    clients, seconds = (2, 3.0) if args.smoke else (args.clients, args.seconds)
    result = run(clients, seconds)
    for op in ("commit", "search"):
        r = result[op]
        print(
            f"{op:7} {r.get('per_s', 0):6.1f}/s  p50 {r.get('p50_ms', 0):7.1f} ms  "
            f"p95 {r.get('p95_ms', 0):7.1f} ms  p99 {r.get('p99_ms', 0):7.1f} ms  n={r['n']}"
        )
    print(f"status {result['status']}  errors {result['errors']}")
    print(f"server RSS {result['rss_mb']['before']} -> {result['rss_mb']['after']} MB")
    print(f"acknowledged writes {result['acknowledged']}, present {result['acknowledged_present']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"smoke": args.smoke, **result}, indent=2))
    if result["acknowledged"] != result["acknowledged_present"]:
        raise SystemExit("acknowledged writes are missing")


if __name__ == "__main__":
    main()
