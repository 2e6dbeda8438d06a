"""Fuzz the REST API from its own OpenAPI description, over several seeds: no request may
answer 5xx, and every error must be JSON in the app's ``{"error", "message"}`` shape.

    .venv/bin/python benchmarks/fuzz.py [--seeds 777,1,2 | --seed-count 3] [--examples 250]
                                        [--only '^/graph'] [--smoke]
                                        [--out benchmarks/results/fuzz.json]

Each seed gets a fresh embedded database in a temporary data dir (so ``--seeds N`` alone
replays that seed's row of a longer run), the real MiniLM embedder (loaded once) and no
LLM; the app runs in-process (schemathesis' ASGI transport, Host 127.0.0.1) with an
all-tenant operator key acting for tenant ``fuzz``, rate limits off. Schemathesis'
engine (what ``st run`` does) runs every operation in ``/schema/openapi.json`` through
its phases: examples, coverage (boundary and schema-violating values of every
parameter: NUL bytes, huge numbers, wrong types, unexpected methods), fuzzing
(``--examples`` valid and invalid requests per operation, drawn from the seed) and
stateful sequences (a response's values fed into the next request: a key created,
then listed, then revoked).

Seeds: ``--seeds 777,1,2`` names them; without it ``--seed-count`` seeds (3 by
default) are drawn anew each run, so repeated runs explore new inputs, and printed, so
any run can be replayed with ``--seeds``.

The fuzzing key cannot be revoked for good. Schemathesis feeds values seen in responses
into later requests: it sees the key's prefix in ``GET /keys?all_tenants=true`` and
sends it to ``POST /keys/{prefix}/revoke`` (in the coverage and fuzzing phases as well
as the stateful one), after which the rest of the run would answer 401, a run that
passes while testing nothing. No key is beyond an all-tenant admin's reach (with
``all_tenants=true``, which the fuzzer sends too, it revokes any key, itself
included), so the harness does not rely on the API to protect it: a wrapper around the
app un-revokes the fuzzing key right after any ``POST /keys/{prefix}/revoke`` that
revoked it, before the next request is sent, and counts how often (``key_restored``;
the 401s are counted too). The revocation itself was real and answered as the API
answers it.

It prints, per operation, the requests of each seed and the error counts over all
seeds, then a line per seed: requests, the fewest and most requests of an operation,
requests by phase, 2xx / 4xx / 5xx, errors whose body is not JSON, errors not in the
``{error, message}`` shape, failures and key restores; then every failure with the
seed, the phase, a curl command that reproduces it (after the earlier steps of its
stateful sequence, if any), the answer and, for a 5xx, the server's traceback (logged
by the app with the response's request id). The JSON has the same per seed (``runs``)
and summed over seeds. Exit status 1 when any request failed. ``--smoke`` runs the
fuzzing phase alone with one example per operation (``make smoke`` runs it).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import schemathesis
from litestar import Litestar
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Scope, Send
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
MAX_FAILURES_KEPT = 10  # per operation and seed
TRACEBACK_LINES = 10  # printed of a 5xx's server traceback
SMOKE_EXAMPLES = 1
DEFAULT_SEED_COUNT = 3
PHASES = ("examples", "coverage", "fuzzing", "stateful")
STATUS_KEYS = ("2xx", "3xx", "4xx", "401", "5xx", "non_json", "malformed", "failures")
REVOKE_PATH = re.compile(r"^/keys/[^/]+/revoke/?$")
UNREVOKE = "UPDATE api_keys SET revoked_at = NULL WHERE prefix = %s AND revoked_at IS NOT NULL"
REQUEST_ID = re.compile(r"\(request ([A-Za-z0-9._-]+)\)")
# A reproducing curl command's headers (schemathesis shows Authorization as [Filtered]:
# send an all-tenant admin key's).
REPRO_HEADERS = {"Authorization": "Bearer $ELEPHANT_KEY", TENANT_HEADER: TENANT}


@dataclass
class Tally:
    """One operation's responses under one seed: by status class and phase, and the
    requests that failed."""

    requests: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    phases: Counter[str] = field(default_factory=Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)

    def add(self, phase: str, status: int, answer: bytes) -> dict[str, Any] | None:
        """Count a response; the failure record to fill in when it is kept, else None."""
        self.requests += 1
        self.phases[phase] += 1
        self.statuses[f"{status // 100}xx"] += 1
        if status == 401:  # many: the run lost its key (see KeyKeeper)
            self.statuses["401"] += 1
        if status < 400:
            return None
        shape = error_shape(answer)
        if shape == "not JSON":
            self.statuses["non_json"] += 1
        elif shape is not None:
            self.statuses["malformed"] += 1
        if status < 500 and shape is None:
            return None
        self.statuses["failures"] += 1
        if len(self.failures) >= MAX_FAILURES_KEPT:
            return None
        why = f"server error {status}" if status >= 500 else f"{status} body is {shape}"
        if status >= 500 and shape is not None:
            why += f" (body is {shape})"
        failure: dict[str, Any] = {"problem": why, "phase": phase, "status": status}
        self.failures.append(failure)
        return failure

    def to_dict(self) -> dict[str, Any]:
        counts = {key: self.statuses[key] for key in STATUS_KEYS}
        by_phase = {name: self.phases[name] for name in PHASES if self.phases[name]}
        return {"requests": self.requests, "by_phase": by_phase, **counts}


def error_shape(body: bytes) -> str | None:
    """What is wrong with an error's body (None: JSON with ``error`` and ``message``)."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return "not JSON"
    if not isinstance(parsed, dict) or not {"error", "message"} <= parsed.keys():
        return "JSON without error/message"
    return None


def parse_seeds(text: str) -> list[int]:
    """``777,1,2`` as [777, 1, 2]: non-negative integers, none twice."""
    try:
        seeds = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"seeds are integers separated by commas: {exc}") from None
    if not seeds or min(seeds) < 0 or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError("give one or more distinct non-negative integers")
    return seeds


def draw_seeds(count: int) -> list[int]:
    """``count`` distinct seeds, new each run (short enough to type back in)."""
    return random.SystemRandom().sample(range(1_000_000), count)


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
    """Schemathesis' settings: derandomised from ``seed``, every response kept for the
    tally (the only check is not_a_server_error, and a failure does not stop the
    operation)."""
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


def load_schema(app: Litestar, target: ASGIApp, config: Any, only: str | None = None) -> Any:
    """The app's own OpenAPI document; requests go to ``target`` in-process (no socket,
    no HTTP round trip)."""
    document = schemathesis.openapi.from_dict(app.openapi_schema.to_schema(), config=config)
    document.app = target
    schema = document.exclude(path_regex=EXCLUDED_PATHS)
    return schema if only is None else schema.include(path_regex=only)


class KeyKeeper:
    """The app, and after a request that revoked the fuzzing key, the key un-revoked
    (before the next request: the engine sends one at a time)."""

    def __init__(self, app: ASGIApp, db: Database, prefix: str) -> None:
        self.app = app
        self.db = db
        self.prefix = prefix
        self.restored = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)
        if scope["type"] == ScopeType.HTTP and REVOKE_PATH.match(scope["path"]):
            self.restored += self.restore()

    def restore(self) -> int:
        with self.db.admin_connection() as conn, conn.transaction():
            return conn.execute(UNREVOKE, (self.prefix,)).rowcount


class Tracebacks(logging.Handler):
    """The tracebacks the app logs with a 500 (app/api/errors.py), by request id."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.by_request: dict[str, str] = {}
        self.unattributed: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info:
            text += "\n" + logging.Formatter().formatException(record.exc_info)
        found = REQUEST_ID.search(record.getMessage())
        if found:
            self.by_request[found.group(1)] = text
        elif len(self.unattributed) < MAX_FAILURES_KEPT:
            self.unattributed.append(text)


@contextmanager
def captured_tracebacks() -> Iterator[Tracebacks]:
    handler = Tracebacks()
    logger = logging.getLogger("app")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def curl(case: Any) -> str:
    """A curl command sending ``case`` again (with $ELEPHANT_KEY for the run's key)."""
    try:
        return str(case.as_curl_command(headers=REPRO_HEADERS, base_url=BASE_URL))
    except Exception as exc:  # noqa: BLE001 (a failing reproduction must not hide the failure)
        return f"(no curl command: {type(exc).__name__}: {exc})"


def header(headers: Any, name: str) -> str | None:
    for key, value in (headers or {}).items():
        if key.lower() == name:
            return str(value[0] if isinstance(value, list) else value)
    return None


def run_engine(schema: Any, tracebacks: Tracebacks, seed: int) -> dict[str, Tally]:
    """Every request the engine sent, tallied by operation ("POST /commit")."""
    tallies: dict[str, Tally] = {}
    seen: set[str] = set()
    for event in from_schema(schema).execute():
        if isinstance(event, events.FatalError):
            raise RuntimeError(f"schemathesis stopped: {event.exception}")
        if not isinstance(event, events.ScenarioFinished | events.FuzzScenarioFinished):
            continue
        phase = str(getattr(event, "phase", None) or "fuzzing")
        recorder = event.recorder
        for case_id, interaction in recorder.interactions.items():
            if case_id in seen or interaction.response is None:
                continue
            seen.add(case_id)
            case = recorder.cases[case_id].value
            response = interaction.response
            tally = tallies.setdefault(case.operation.label, Tally())
            failure = tally.add(phase, response.status_code, response.content or b"")
            if failure is None:
                continue
            steps = [
                curl(step)
                for step in recorder.iter_chain_cases(case_id=case_id)
                if step.id != case_id
            ]
            rid = header(response.headers, "x-request-id")
            failure.update(
                seed=seed,
                request=f"{interaction.request.method} {interaction.request.uri}",
                curl=curl(case),
                steps_before=steps,
                body=(interaction.request.body or b"")[:400].decode(errors="replace"),
                answer=(response.content or b"")[:400].decode(errors="replace"),
                request_id=rid,
                traceback=tracebacks.by_request.get(rid or "") if rid else None,
            )
    return tallies


def shutdown_lifespan() -> None:
    """Schemathesis starts the app's lifespan once per app and keeps it until exit: each
    seed's app is stopped before its database closes."""
    from schemathesis.python import asgi

    with suppress(Exception):
        asgi.shutdown_lifespans()


def run_seed(
    seed: int, examples: int, only: str | None, embedder: LocalEmbedder, *, smoke: bool
) -> dict[str, Any]:
    """One seed on a fresh database: its per-operation tallies, failures and restores."""
    with tempfile.TemporaryDirectory(prefix="elephant-fuzz-") as tmp:
        settings = fuzz_settings(Path(tmp))
        db = Database(settings)
        db.open()
        try:
            elephant = Elephant(settings=settings, db=db, embedder=embedder, llm=None)
            request = KeyIn(all_tenants=True, scopes=["read", "write", "admin"], name="fuzz")
            created = create_key(db, request)
            headers = {"Authorization": f"Bearer {created.key}", TENANT_HEADER: TENANT}
            app = create_app(settings, elephant)
            keeper = KeyKeeper(app, db, created.prefix)
            config = fuzz_config(headers, examples, seed, smoke=smoke)
            started = time.perf_counter()
            with captured_tracebacks() as tracebacks:
                tallies = run_engine(load_schema(app, keeper, config, only), tracebacks, seed)
                shutdown_lifespan()
            elapsed = time.perf_counter() - started
        finally:
            db.close()
    operations = {label: tallies[label].to_dict() for label in sorted(tallies)}
    totals = {
        key: sum(item[key] for item in operations.values()) for key in ("requests", *STATUS_KEYS)
    }
    phases = Counter[str]()
    for item in operations.values():
        phases.update(item["by_phase"])
    per_operation = [item["requests"] for item in operations.values()] or [0]
    failures = [
        {"operation": label, **failure}
        for label in sorted(tallies)
        for failure in tallies[label].failures
    ]
    return {
        "seed": seed,
        "elapsed_s": round(elapsed, 1),
        "requests_per_s": round(totals["requests"] / elapsed, 1) if elapsed else None,
        "operations_count": len(operations),
        "requests_per_operation": {"min": min(per_operation), "max": max(per_operation)},
        "by_phase": {name: phases[name] for name in PHASES},
        "totals": totals,
        "key_restored": keeper.restored,
        "failures": failures,
        "unattributed_errors": tracebacks.unattributed,
        "operations": operations,
    }


def summed(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per operation over every seed: the counts summed, and each seed's requests."""
    operations: dict[str, dict[str, Any]] = {}
    for run in runs:
        for label, item in run["operations"].items():
            row = operations.setdefault(
                label, {"requests": 0, **dict.fromkeys(STATUS_KEYS, 0), "requests_by_seed": {}}
            )
            for key in ("requests", *STATUS_KEYS):
                row[key] += item[key]
            row["requests_by_seed"][str(run["seed"])] = item["requests"]
    totals = {key: sum(run["totals"][key] for run in runs) for key in ("requests", *STATUS_KEYS)}
    return {"totals": totals, "operations": dict(sorted(operations.items()))}


def report(
    runs: Sequence[dict[str, Any]], examples: int, *, smoke: bool, seeds: Sequence[int]
) -> dict[str, Any]:
    elapsed = sum(run["elapsed_s"] for run in runs)
    return {
        "smoke": smoke,
        "examples_per_operation": examples,
        "seeds": list(seeds),
        "seeds_done": [run["seed"] for run in runs],
        "phases": "fuzzing" if smoke else ", ".join(PHASES),
        "elapsed_s": round(elapsed, 1),
        "key_restored": sum(run["key_restored"] for run in runs),
        **summed(runs),
        "runs": list(runs),
    }


def print_report(results: dict[str, Any]) -> None:
    seeds = [str(run["seed"]) for run in results["runs"]]
    columns = ("5xx", "non_json", "malformed", "failures")
    width = max([40, *(len(label) + 1 for label in results["operations"])])
    print(
        f"requests per operation and seed; error counts over all seeds\n{'operation':{width}}"
        + "".join(f"{'s' + seed:>9}" for seed in seeds)
        + "".join(f"{name:>10}" for name in columns)
    )
    rows = [*results["operations"].items(), ("total", results["totals"])]
    for label, item in rows:
        by_seed = item.get("requests_by_seed") or {
            str(run["seed"]): run["totals"]["requests"] for run in results["runs"]
        }
        print(
            f"{label:{width}}"
            + "".join(f"{by_seed.get(seed, 0):>9}" for seed in seeds)
            + "".join(f"{item[name]:>10}" for name in columns)
        )
    print(
        f"\n{'seed':>8}{'requests':>10}{'min/op':>8}{'max/op':>8}"
        + "".join(f"{name[:8]:>9}" for name in PHASES)
        + "".join(f"{name:>10}" for name in ("2xx", "4xx", *columns))
        + f"{'key_rest':>9}{'s':>8}{'req/s':>7}"
    )
    for run in results["runs"]:
        totals, span = run["totals"], run["requests_per_operation"]
        print(
            f"{run['seed']:>8}{totals['requests']:>10}{span['min']:>8}{span['max']:>8}"
            + "".join(f"{run['by_phase'][name]:>9}" for name in PHASES)
            + "".join(f"{totals[name]:>10}" for name in ("2xx", "4xx", *columns))
            + f"{run['key_restored']:>9}{run['elapsed_s']:>8}{run['requests_per_s']:>7}"
        )
    print(
        f"{len(seeds)} seeds ({', '.join(seeds)}), {results['examples_per_operation']} "
        f"fuzzing examples per operation, {results['elapsed_s']} s"
    )
    for run in results["runs"]:
        for failure in run["failures"]:
            print(f"\nseed {failure['seed']}, {failure['phase']}, {failure['operation']}: ", end="")
            print(f"{failure['problem']}\n  {failure['request']}")
            for step in failure["steps_before"]:
                print(f"  after: {step}")
            print(f"  repro:  {failure['curl']}\n  answer: {failure['answer']}")
            if failure["traceback"]:  # its first line and innermost frames (all in the JSON)
                lines = failure["traceback"].splitlines()
                shown = lines if len(lines) <= TRACEBACK_LINES else [lines[0], "...", *lines[-8:]]
                print("  server: " + "\n          ".join(shown))
        for text in run["unattributed_errors"]:
            print(f"\nseed {run['seed']}: the app logged an error\n  {text}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--examples", type=int, default=250, help="fuzzing examples per operation")
    parser.add_argument(
        "--seeds", type=parse_seeds, help="the seeds, comma-separated (e.g. 777,1,2)"
    )
    parser.add_argument(
        "--seed-count",
        type=int,
        default=DEFAULT_SEED_COUNT,
        help=f"without --seeds: this many seeds drawn anew (default {DEFAULT_SEED_COUNT})",
    )
    parser.add_argument("--only", help="only operations whose path matches this regex")
    parser.add_argument("--smoke", action="store_true", help="fuzzing only, 1 example each")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/fuzz.json"))
    args = parser.parse_args()
    if args.seeds is None and args.seed_count < 1:
        parser.error("--seed-count must be at least 1")
    seeds: list[int] = args.seeds or draw_seeds(args.seed_count)
    examples = SMOKE_EXAMPLES if args.smoke else args.examples
    print(f"seeds {','.join(map(str, seeds))} (replay with --seeds)", flush=True)
    embedder = LocalEmbedder(EmbeddingSettings())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    runs: list[dict[str, Any]] = []
    for seed in seeds:
        runs.append(run_seed(seed, examples, args.only, embedder, smoke=args.smoke))
        done = runs[-1]
        print(
            f"seed {seed}: {done['totals']['requests']} requests, {done['totals']['5xx']} 5xx, "
            f"{done['totals']['non_json']} non-JSON, {done['totals']['failures']} failures "
            f"in {done['elapsed_s']} s",
            flush=True,
        )
        # Written after every seed: a long run stopped half-way keeps the seeds it did.
        results = report(runs, examples, smoke=args.smoke, seeds=seeds)
        args.out.write_text(json.dumps(results, indent=2))
    print()
    print_report(results)
    print(f"\nJSON: {args.out}")
    sys.exit(1 if results["totals"]["failures"] else 0)


if __name__ == "__main__":
    main()
