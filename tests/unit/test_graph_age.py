"""The guards on what is spliced into a Cypher statement raise, under ``python -O`` too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from psycopg import sql

from app.services.graph.age import cypher_statement, graph_name

ROOT = Path(__file__).resolve().parents[2]


def test_a_checked_statement_is_built() -> None:
    statement = cypher_statement("team-a", "MATCH (e:Entity) RETURN e", ("e",), label="knows")
    assert isinstance(statement, sql.Composed)


@pytest.mark.parametrize(
    ("tenant", "query", "label", "message"),
    [
        ("Team A", "RETURN 1", None, "not safe to splice"),
        ("team-a", "RETURN 1 $cypher$; DROP TABLE facts; $cypher$", None, "may not contain"),
        ("team-a", "RETURN '100%'", None, "may not contain"),
        ("team-a", "MATCH ()-[r:<LABEL>]->() RETURN r", "knows]->() DETACH DELETE", "not a"),
    ],
)
def test_unsafe_pieces_are_refused(
    tenant: str, query: str, label: str | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        cypher_statement(tenant, query, label=label)


def test_the_guards_hold_under_python_dash_o() -> None:
    """``assert`` vanishes under -O; these checks must not."""
    code = (
        "from app.services.graph.age import cypher_statement\n"
        "try:\n"
        "    cypher_statement('team-a', 'RETURN $cypher$')\n"
        "except ValueError:\n"
        "    print('refused')\n"
    )
    done = subprocess.run(
        [sys.executable, "-O", "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip() == "refused", done.stderr[-2000:]


def test_graph_names_pass_the_guard() -> None:
    assert graph_name("team-a").startswith("g_team_a_")
    cypher_statement("a" * 64, "RETURN 1")  # long tenants are cut, not refused
