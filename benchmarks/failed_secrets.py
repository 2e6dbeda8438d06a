"""Issue 40's lockout attack, measured: a guesser behind the victim's own address, who
knows the victim's key prefix, sends wrong secrets on it; how many of the victim's calls
with the right key fail, and how many lookups and audit rows the guesser causes.

    .venv/bin/python benchmarks/failed_secrets.py [--calls 20] [--interval 1.5] [--smoke]
        [--out benchmarks/results/failed_secrets.json]

A fresh embedded database in a temporary data dir; the API (REST and MCP at /mcp) on
uvicorn on 127.0.0.1, with the default budget (auth.rate_denied_per_minute 30). Phases:

- ``burst``: 40 quick wrong secrets (over the budget of 30) on the victim's prefix (REST
  and MCP in turn), then ``--calls`` victim calls (GET /stats and an MCP initialize in
  turn);
- ``paced``: one wrong secret every ``--interval`` seconds (the issue's 1.5 s, faster
  than the budget refills), each followed by a victim call, ``--calls`` times;
- ``cold``: the same burst on a second key's prefix *before* that key's first call in
  this process (just after a restart), then its calls;
- ``flood``: 400 quick guesses, each on a fresh random prefix, then on one known
  prefix: how many were looked up / audited (401) and how many refused (429).

Before the fix (issue 40, item 6; this script on the code before it): the burst failed 20
of the victim's 20 calls, the paced phase 5 of 20 (the issue saw 11 of 20), the cold
phase 20 of 20; after it, 0 of 20 each. `--smoke`: 4 calls, 0.2 s apart.
"""

from __future__ import annotations

import argparse
import json
import secrets
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
from app.services.access.keys import KeyIn, create_key
from app.services.runtime import Elephant

ACCEPT = {"Accept": "application/json, text/event-stream"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}


class NoEmbedder:
    """Nothing measured here embeds; loading the model would only slow start-up."""

    model_name = "none"
    dim = 384

    def embed_documents(self, texts: Sequence[str]) -> Any:
        raise RuntimeError("not used by this benchmark")

    def embed_queries(self, texts: Sequence[str]) -> Any:
        raise RuntimeError("not used by this benchmark")


@contextmanager
def served(settings: Settings, elephant: Elephant) -> Iterator[str]:
    """The API on a free loopback port, run as `elephant serve` runs uvicorn."""
    config = uvicorn.Config(
        create_app(settings, elephant), host="127.0.0.1", port=0, log_level="warning"
    )
    config.proxy_headers = False
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", **ACCEPT}


def wrong(key: str) -> str:
    return f"ek_{key.split('_')[1]}_{secrets.token_urlsafe(32)}"


def call(http: httpx.Client, key: str, n: int) -> int:
    """REST and MCP in turn."""
    if n % 2:
        return http.post("/mcp", json=INIT, headers=bearer(key)).status_code
    return http.get("/stats", headers=bearer(key)).status_code


def tally(statuses: list[int]) -> dict[str, int]:
    return {str(code): statuses.count(code) for code in sorted(set(statuses))}


def phase(http: httpx.Client, victim: str, calls: int, interval: float, burst: int) -> Any:
    guesses = [call(http, wrong(victim), n) for n in range(burst)]
    answers = []
    for n in range(calls):
        if interval:
            guesses.append(call(http, wrong(victim), n))
            time.sleep(interval)
        answers.append(call(http, victim, n))
    failed = sum(code >= 400 for code in answers)
    return {"victim_calls": calls, "victim_failed": failed, "guesses": tally(guesses)}


def run(calls: int, interval: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="elephant-secrets-") as tmp:
        settings = Settings.model_validate({"data_dir": tmp, "worker": {"enabled": False}})
        db = Database(settings)
        db.open()
        try:
            elephant = Elephant(settings=settings, db=db, embedder=NoEmbedder(), llm=None)
            victim, cold = (
                create_key(db, KeyIn(tenant="bench", scopes=["read"], name=name)).key
                for name in ("victim", "cold")
            )
            results: dict[str, Any] = {"budget_per_minute": settings.auth.rate_denied_per_minute}
            with served(settings, elephant) as url, httpx.Client(base_url=url, timeout=30) as http:
                assert call(http, victim, 0) == 200, "the victim's key works"
                results["burst"] = phase(http, victim, calls, 0.0, burst=40)
                results["paced"] = {"interval_s": interval} | phase(
                    http, victim, calls, interval, burst=0
                )
                results["cold"] = phase(http, cold, calls, 0.0, burst=40)
                fresh = [
                    call(http, f"ek_{secrets.token_hex(6)}_{secrets.token_urlsafe(32)}", n)
                    for n in range(400)
                ]
                known = [call(http, wrong(victim), n) for n in range(400)]
                results["flood"] = {"fresh_prefixes": tally(fresh), "known_prefix": tally(known)}
            return results
        finally:
            db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--interval", type=float, default=1.5)
    parser.add_argument("--smoke", action="store_true", help="4 calls, 0.2 s apart")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/failed_secrets.json"))
    args = parser.parse_args()
    calls, interval = (4, 0.2) if args.smoke else (args.calls, args.interval)
    results = run(calls, interval)
    for name in ("burst", "paced", "cold"):
        got = results[name]
        print(
            f"{name:6} victim's calls failed {got['victim_failed']} of {got['victim_calls']}"
            f"   guesses answered {got['guesses']}"
        )
    flood = results["flood"]
    print(
        f"flood  400 fresh prefixes {flood['fresh_prefixes']}  400 on one known prefix "
        f"{flood['known_prefix']}  (401: looked up or audited; 429: refused before)"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"smoke": args.smoke, **results}, indent=2))


if __name__ == "__main__":
    main()
