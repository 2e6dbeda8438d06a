"""Fuzz the REST API from its own OpenAPI description: no request may answer 5xx.

    .venv/bin/python benchmarks/fuzz.py [--examples 250] [--seed 12] [--only '^/graph']
                                        [--smoke] [--out benchmarks/results/fuzz.json]

A fresh embedded database in a temporary data dir, the real MiniLM embedder and
the offline LLM; the app in-process (schemathesis' ASGI transport, Host
127.0.0.1) with an all-tenant operator key acting for tenant ``fuzz``, rate
limits off. Schemathesis' engine (what ``st run`` does) runs every operation in
``/schema/openapi.json`` through its phases: examples, coverage (boundary and
schema-violating values of every parameter: NUL bytes, huge numbers, wrong
types, unexpected methods), fuzzing (``--examples`` valid and invalid requests
per operation, derandomised from ``--seed``) and stateful sequences. It prints
requests / 2xx / 4xx / 5xx per endpoint and every failure: a 5xx, or a 4xx whose
body is not ``{"error", "message"}``. Exit status 1 when any request failed.
``--smoke`` runs the fuzzing phase alone with one example per operation (the
test suite runs it).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import schemathesis
from litestar import Litestar
from schemathesis.engine import events, from_schema

from app.api import create_app
from app.config import EmbeddingSettings, Settings
from app.db import Database
from app.protocol import TENANT_HEADER
from app.providers.embedder import LocalEmbedder
from app.services.access.keys import KeyIn, create_key
from app.services.runtime import Elephant

BASE_URL = "http://127.0.0.1:7777"
TENANT = "fuzz"
EXCLUDED_PATHS = "^/(mcp|schema)"  # the MCP mount and the API description itself
MAX_FAILURES_KEPT = 10
SMOKE_EXAMPLES = 1


@dataclass
class Tally:
    """Status classes of one operation's responses, and the requests that failed."""

    requests: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)

    def add(self, method: str, uri: str, body: bytes | None, status: int, answer: bytes) -> None:
        self.requests += 1
        self.statuses[f"{status // 100}xx"] += 1
        why = problem(status, answer)
        if why is not None:
            self.statuses["failures"] += 1
            if len(self.failures) < MAX_FAILURES_KEPT:
                self.failures.append(
                    {
                        "problem": why,
                        "request": f"{method} {uri}",
                        "body": (body or b"")[:400].decode(errors="replace"),
                        "answer": answer[:400].decode(errors="replace"),
                    }
                )

    def to_dict(self) -> dict[str, Any]:
        counts = {key: self.statuses[key] for key in ("2xx", "3xx", "4xx", "5xx", "failures")}
        return {"requests": self.requests, **counts, "failed_requests": self.failures}


def problem(status: int, body: bytes) -> str | None:
    """Why a response is a failure: any 5xx, or a 4xx not in the app's error shape."""
    if status >= 500:
        return f"server error {status}"
    if 400 <= status < 500:
        try:
            parsed = json.loads(body)
        except ValueError:
            return f"{status} body is not JSON"
        if not isinstance(parsed, dict) or not {"error", "message"} <= parsed.keys():
            return f"{status} body lacks error/message"
    return None


def fuzz_settings(data_dir: Path) -> Settings:
    """Rate limits off (thousands of requests a minute) and no MCP mount (not in OpenAPI)."""
    return Settings.model_validate(
        {
            "data_dir": str(data_dir),
            "worker": {"enabled": False},
            "mcp": {"mount_in_api": False},
            "auth": {
                "rate_read_per_minute": 0,
                "rate_write_per_minute": 0,
                "rate_admin_per_minute": 0,
            },
        }
    )


def fuzz_config(headers: dict[str, str], examples: int, seed: int, *, smoke: bool) -> Any:
    """Schemathesis' settings: derandomised, every response kept for the tally (the
    only check is not_a_server_error, and a failure does not stop the operation)."""
    phases: dict[str, Any] = {}
    if smoke:
        phases = {name: {"enabled": False} for name in ("examples", "coverage", "stateful")}
    return schemathesis.Config.from_dict(
        {
            "seed": seed,
            "base-url": BASE_URL,
            "headers": headers,
            "workers": 1,
            "continue-on-failure": True,
            "generation": {"max-examples": examples, "deterministic": True, "database": "none"},
            "checks": {"enabled": False, "not_a_server_error": {"enabled": True}},
            "phases": phases,
        }
    )


def load_schema(app: Litestar, config: Any, only: str | None = None) -> Any:
    """The app's own OpenAPI document, called in-process (no socket, no HTTP round trip)."""
    schema = schemathesis.openapi.from_dict(app.openapi_schema.to_schema(), config=config)
    schema.app = app
    schema = schema.exclude(path_regex=EXCLUDED_PATHS)
    return schema if only is None else schema.include(path_regex=only)


def run_engine(schema: Any) -> dict[str, Tally]:
    """Every request the engine sent, tallied by operation ("POST /commit")."""
    tallies: dict[str, Tally] = {}
    seen: set[str] = set()
    for event in from_schema(schema).execute():
        if isinstance(event, events.FatalError):
            raise RuntimeError(f"schemathesis stopped: {event.exception}")
        if not isinstance(event, events.ScenarioFinished | events.FuzzScenarioFinished):
            continue
        recorder = event.recorder
        for case_id, interaction in recorder.interactions.items():
            if case_id in seen or interaction.response is None:
                continue
            seen.add(case_id)
            label = recorder.cases[case_id].value.operation.label
            request, response = interaction.request, interaction.response
            tallies.setdefault(label, Tally()).add(
                request.method, request.uri, request.body, response.status_code, response.content
            )
    return tallies


@contextmanager
def fuzz_app(data_dir: Path) -> Iterator[tuple[Litestar, dict[str, str]]]:
    """The app on a fresh database, and the headers of an operator acting for ``fuzz``."""
    settings = fuzz_settings(data_dir)
    db = Database(settings)
    db.open()
    try:
        elephant = Elephant(
            settings=settings, db=db, embedder=LocalEmbedder(EmbeddingSettings()), llm=None
        )
        request = KeyIn(all_tenants=True, scopes=["read", "write", "admin"], name="fuzz")
        key = create_key(db, request).key
        headers = {"Authorization": f"Bearer {key}", TENANT_HEADER: TENANT}
        yield create_app(settings, elephant), headers
    finally:
        db.close()


def run(examples: int, seed: int, only: str | None, *, smoke: bool) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="elephant-fuzz-") as tmp,
        fuzz_app(Path(tmp)) as (app, headers),
    ):
        config = fuzz_config(headers, examples, seed, smoke=smoke)
        started = time.perf_counter()
        tallies = run_engine(load_schema(app, config, only))
        elapsed = time.perf_counter() - started
    operations = {label: tallies[label].to_dict() for label in sorted(tallies)}
    totals = {
        key: sum(item[key] for item in operations.values())
        for key in ("requests", "2xx", "3xx", "4xx", "5xx", "failures")
    }
    return {
        "examples_per_operation": examples,
        "seed": seed,
        "phases": "fuzzing" if smoke else "examples, coverage, fuzzing, stateful",
        "elapsed_s": round(elapsed, 1),
        "requests_per_s": round(totals["requests"] / elapsed, 1) if elapsed else None,
        "totals": totals,
        "operations": operations,
    }


def print_report(results: dict[str, Any]) -> None:
    columns = ("requests", "2xx", "4xx", "5xx", "failures")
    print(f"{'operation':40}" + "".join(f"{name:>10}" for name in columns))
    rows = [*results["operations"].items(), ("total", results["totals"])]
    for label, item in rows:
        print(f"{label:40}" + "".join(f"{item[name]:>10}" for name in columns))
    print(f"{results['elapsed_s']} s, {results['requests_per_s']} requests/s")
    for label, item in results["operations"].items():
        for failure in item["failed_requests"]:
            print(f"\n{label}: {failure['problem']}\n  {failure['request']}")
            print(f"  body:   {failure['body']}\n  answer: {failure['answer']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=int, default=250, help="fuzzing examples per operation")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--only", help="only operations whose path matches this regex")
    parser.add_argument("--smoke", action="store_true", help="fuzzing only, 1 example each")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/fuzz.json"))
    args = parser.parse_args()
    examples = SMOKE_EXAMPLES if args.smoke else args.examples
    results = run(examples, args.seed, args.only, smoke=args.smoke)
    print_report(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"smoke": args.smoke, **results}, indent=2))
    sys.exit(1 if results["totals"]["failures"] else 0)


if __name__ == "__main__":
    main()
