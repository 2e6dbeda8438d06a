"""Fuzz every REST operation from the app's own OpenAPI document: never a 5xx, and
every 4xx in the app's error shape ({"error", "message"}).

Schemathesis generates valid and schema-violating requests (wrong types, NUL
bytes, boundary numbers, odd dates, deep objects) per operation, drawn from a
seed, and sends them in-process to the app on this module's real database. The
seed changes every run, so the suite explores new inputs over time:
``ELEPHANT_FUZZ_SEED`` when set, else one drawn from pytest-xdist's run id (the same
in every worker of a run) or, without xdist, from the clock. A failure names it, with
the command that replays it (``ELEPHANT_FUZZ_SEED=<seed> .venv/bin/pytest
tests/integration/test_fuzz.py``). The example count is small so the module stays
near a minute on two cores; benchmarks/fuzz.py runs the same generator with every
phase, several seeds and far more examples.

The operations are read from an app built for its OpenAPI document alone (no
database is opened), so pytest lists one test per operation; the requests go to
the app of the ``fuzz_target`` fixture. (schemathesis' fixture-based loader does
not run under pytest 9.)
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from litestar import Litestar

from app.api import create_app
from app.config import Settings
from app.services.runtime import Elephant
from tests.conftest import operator_key

BASE_URL = "http://127.0.0.1:7777"
EXAMPLES = 12
SEED_VARIABLE = "ELEPHANT_FUZZ_SEED"
NO_MCP = {"mcp": {"mount_in_api": False}}


def run_seed() -> int:
    """This run's seed: ``ELEPHANT_FUZZ_SEED``, else drawn from the xdist run id (every
    worker collects the module, and all must draw the same) or the clock."""
    chosen = os.environ.get(SEED_VARIABLE, "").strip()
    if chosen:
        return int(chosen)
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    return int(run_id, 16) % 1_000_000 if run_id else time.time_ns() // 1000 % 1_000_000


SEED = run_seed()
REPLAY = f"{SEED_VARIABLE}={SEED} .venv/bin/pytest tests/integration/test_fuzz.py"


def openapi_document() -> dict[str, Any]:
    """The API description; building the app opens nothing (start-up does)."""
    unused = Path(tempfile.gettempdir()) / "elephant-openapi-only"
    app = create_app(Settings.model_validate({"data_dir": unused, **NO_MCP}))
    return app.openapi_schema.to_schema()


schema = schemathesis.openapi.from_dict(
    openapi_document(),
    config=schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "generation": {"max-examples": EXAMPLES, "deterministic": True, "database": "none"},
            "phases": {"coverage": {"enabled": False}, "stateful": {"enabled": False}},
        }
    ),
).exclude(path_regex="^/(mcp|schema)")


@pytest.fixture(scope="module")
def fuzz_target(settings: Settings, elephant: Elephant) -> tuple[Litestar, dict[str, str]]:
    """The API on this module's database, rate limits off (hundreds of requests a minute),
    and the headers of an operator key acting for tenant ``fuzz``."""
    unlimited = settings.auth.model_copy(
        update={"rate_read_per_minute": 0, "rate_write_per_minute": 0, "rate_admin_per_minute": 0}
    )
    fuzz_settings = settings.model_copy(
        update={"auth": unlimited, "mcp": settings.mcp.model_copy(update={"mount_in_api": False})}
    )
    runtime = Elephant(settings=fuzz_settings, db=elephant.db, embedder=elephant.embedder, llm=None)
    headers = {
        "Authorization": f"Bearer {operator_key(elephant.db, 'fuzz')}",
        "X-Elephant-Tenant": "fuzz",
    }
    print(f"fuzz seed {SEED}; replay: {REPLAY}")
    return create_app(fuzz_settings, runtime), headers


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_server_errors(case: Any, fuzz_target: tuple[Litestar, dict[str, str]]) -> None:
    try:
        check(case, *fuzz_target)
    except Exception as exc:  # an assertion, or the call itself failing
        exc.add_note(f"fuzz seed {SEED}; replay: {REPLAY}")
        raise


def check(case: Any, app: Litestar, headers: dict[str, str]) -> None:
    response = case.call(base_url=BASE_URL, headers=headers, app=app)
    assert response.status_code < 500, (case.as_curl_command(), response.text[:500])
    if response.status_code >= 400:
        try:
            body = json.loads(response.content)
        except ValueError:
            body = None
        assert isinstance(body, dict), (case.as_curl_command(), response.text[:500])
        assert {"error", "message"} <= body.keys(), (case.as_curl_command(), body)
