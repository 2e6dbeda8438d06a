"""The runnable examples (examples/*.py), run as a user runs them: a subprocess of this
Python, offline (no ANTHROPIC_API_KEY), judged by its exit code (each example ends with
checks that exit 1 when the behaviour is not there) and a few lines of its output.

Every example runs against one API served here on the module's database (ELEPHANT_URL,
and an admin key of a tenant of its own as ELEPHANT_API_KEY), so they pay for no server
start; one test runs an example in its default mode, where it starts (and stops) its own
``elephant serve`` on a temporary embedded Postgres: the one-command path of
examples/README.md. A new example is one more entry in EXAMPLES.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.api import create_app
from app.config import Settings
from app.db import Database
from app.services.access.keys import KeyIn, create_key
from app.services.runtime import Elephant
from tests.conftest import serve_in_thread

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 240  # the default mode's first start loads the embedding model
# What a user's shell may export that would change how an example runs.
CLEARED = ("ANTHROPIC_API_KEY", "ELEPHANT_URL", "ELEPHANT_API_KEY", "ANALYST_DATABASE_URL")


@dataclass(frozen=True)
class Example:
    script: str  # in examples/
    expected: tuple[str, ...]  # substrings of its output


EXAMPLES = [
    Example(
        "support_agent.py",
        (
            "model: scripted (offline)",
            "ok   session 2 recalled the address from session 1",
            "ok   the move was recorded as a contradiction",
            "ok   the old address is kept as history",
            "ok   now only the new address is current",
            "ok   session 4 recalled the new address, not the old one",
            "all checks passed",
        ),
    ),
    Example(
        "langgraph_agent.py",
        (
            "model: scripted (offline)",
            "ok   thread 2 recalled what thread 1 was told",
            "ok   the move updated a memory instead of adding one",
            "ok   the old city is kept as history",
            "ok   thread 4 did not recall Porto",
            "all checks passed",
        ),
    ),
    Example(
        "analyst.py",
        (
            "## Gate decisions per source",
            "## What changed, and what it replaced",
            "## Facts true now (current_facts)",
            "## Most returned by search",
            "UPDATE as the analyst: refused",
            "all checks passed",
        ),
    ),
]


def run_example(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in CLEARED}
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / script)],
        env={**environ, **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def assert_ran(example: Example, result: subprocess.CompletedProcess[str]) -> None:
    output = f"--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    assert result.returncode == 0, f"{example.script} exited {result.returncode}\n{output}"
    for line in example.expected:
        assert line in result.stdout, f"{example.script}: no {line!r} in its output\n{output}"


@pytest.fixture(scope="module")
def url(settings: Settings, elephant: Elephant) -> Iterator[str]:
    """The API in its default mode (API keys) on the module's database, offline."""
    with serve_in_thread(create_app(settings, elephant, bind="127.0.0.1")) as base:
        yield base


def tenant_admin_key(db: Database, tenant: str) -> str:
    request = KeyIn(tenant=tenant, scopes=["read", "write", "admin"], name=f"example {tenant}")
    return create_key(db, request).key


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda example: example.script)
def test_example_against_a_running_server(example: Example, url: str, db: Database) -> None:
    tenant = "ex_" + Path(example.script).stem.replace("_", "-")
    key = tenant_admin_key(db, tenant)
    assert_ran(example, run_example(example.script, ELEPHANT_URL=url, ELEPHANT_API_KEY=key))


@pytest.mark.slow
def test_an_example_starts_its_own_server() -> None:
    """The one-command path: no ELEPHANT_URL, so the example starts `elephant serve` on a
    temporary embedded Postgres, and stops it (and removes its data) at the end."""
    example = EXAMPLES[0]
    result = run_example(example.script)
    assert_ran(example, result)
    assert "[server] starting a throwaway Elephant at http://127.0.0.1:" in result.stdout
    assert "[server] stopped" in result.stdout
    data_dir = result.stdout.split("(data in ", 1)[1].split(")", 1)[0]
    assert not Path(data_dir).exists(), "the throwaway server's data dir was left behind"
