from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
from click.testing import CliRunner

from app import __version__
from app.cli import main
from app.config import Settings
from app.db import Database
from app.db.embedded import EmbeddedPostgres
from app.db.migrate import head_revision

ELEPHANT = str(Path(sys.executable).parent / "elephant")


def run(args: list[str], settings: Settings, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
        **extra,
    }
    return subprocess.run([ELEPHANT, *args], env=env, capture_output=True, text=True, timeout=120)


def test_version() -> None:
    result = CliRunner().invoke(main, ["version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"elephant {__version__}"


def test_sql_command_answers_and_leaves_the_shared_server_running(
    settings: Settings, db: Database, pg_server: EmbeddedPostgres
) -> None:
    result = run(["sql", "-c", "select count(*) from memories"], settings)
    assert result.returncode == 0, result.stderr
    assert "count" in result.stdout and "0" in result.stdout
    assert pg_server.status() is not None, "a CLI that adopted the server must not stop it"


def test_sql_with_tenant_runs_under_row_level_security(settings: Settings, db: Database) -> None:
    with db.tenant("cli-a") as conn:
        conn.execute(
            "INSERT INTO memories (tenant_id, kind, text, content_hash) VALUES ('cli-a','note','x','hx')"
        )
    admin = run(["sql", "-A", "-t", "-c", "select count(*) from memories"], settings)
    scoped_a = run(
        ["sql", "--tenant", "cli-a", "-A", "-t", "-c", "select count(*) from memories"], settings
    )
    scoped_b = run(
        [
            "sql",
            "--tenant",
            "cli-b",
            "-A",
            "-t",
            "-c",
            "select current_user, count(*) from memories",
        ],
        settings,
    )
    assert admin.stdout.strip() == "1"
    assert scoped_a.stdout.strip() == "1"
    assert scoped_b.stdout.strip() == "elephant_app|0"


def test_sql_error_exits_non_zero(settings: Settings, db: Database) -> None:
    result = run(["sql", "-c", "select * from no_such_table"], settings)
    assert result.returncode != 0
    assert "no_such_table" in result.stderr


def test_migrate_status(settings: Settings, db: Database) -> None:
    result = run(["migrate", "--status"], settings)
    assert result.returncode == 0, result.stderr
    head = head_revision()
    assert f"schema revision: {head} (head: {head})" in result.stdout


def test_bad_configuration_is_a_clear_error_not_a_traceback(settings: Settings) -> None:
    result = run(["sql", "-c", "select 1"], settings, ELEPHANT_SERVER_PORT="http")
    assert result.returncode == 1
    assert "server.port" in result.stderr and "ELEPHANT_SERVER_PORT" in result.stderr
    assert "Traceback" not in result.stderr


def test_config_reference_lists_every_key() -> None:
    result = CliRunner().invoke(main, ["config", "reference"])
    assert result.exit_code == 0
    for key in ("database.url", "embedded.tcp", "server.port", "embedding.dim", "data_dir"):
        assert f"`{key}`" in result.output


def test_graph_commands_record_open_search_show(settings: Settings, db: Database) -> None:
    import json

    env = {
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
        "ELEPHANT_TENANT_DEFAULT": "cli-graph",
    }
    body = {
        "entities": [
            {"name": "Parser", "entity_type": "artifact", "observations": ["Reads OFX files"]},
            {"name": "OFX", "entity_type": "concept"},
        ],
        "relations": [{"source": "Parser", "relation_type": "uses", "target": "OFX"}],
    }
    runner = CliRunner()
    recorded = runner.invoke(main, ["graph", "record", "-"], input=json.dumps(body), env=env)
    assert recorded.exit_code == 0, recorded.output
    assert json.loads(recorded.output)["entities_created"] == ["Parser", "OFX"]
    opened = runner.invoke(main, ["graph", "open", "parser"], env=env)
    node = json.loads(opened.output)["entities"][0]
    assert node["observations"][0]["content"] == "Reads OFX files"
    assert node["relations"][0]["target"] == "OFX"
    found = runner.invoke(main, ["graph", "search", "pars", "--limit", "1"], env=env)
    assert json.loads(found.output)["entities"][0]["name"] == "Parser"
    shown = runner.invoke(main, ["graph", "show", "--limit", "1"], env=env)
    assert json.loads(shown.output)["next_offset"] == 1
    bad = {"relations": [{"source": "Parser", "relation_type": "adores", "target": "OFX"}]}
    refused = runner.invoke(main, ["graph", "record", "-"], input=json.dumps(bad), env=env)
    assert refused.exit_code == 1 and "unknown relation type 'adores'" in refused.output
    malformed = runner.invoke(main, ["graph", "record", "-"], input='{"entitys": []}', env=env)
    assert malformed.exit_code == 1 and "entitys" in malformed.output


def test_refused_input_is_a_message_not_a_traceback() -> None:
    """What a request model refuses ends the command with its message on stderr (worded as
    the API and MCP word it) and exit 1, before the database is opened."""
    runner = CliRunner()
    cases = [
        (["search", ""], "Error: query: String should have at least 1 character"),
        (["erase", "--memory", "nope"], "Error: memory_ids[0]: Input should be a valid UUID"),
        (
            ["keys", "create", "--tenant", "acme", "--expires-in-days", "0"],
            "Error: expires_in_days: Input should be greater than 0",
        ),
    ]
    for args, message in cases:
        result = runner.invoke(main, args)
        assert isinstance(result.exception, SystemExit), result.exception  # not an uncaught error
        assert result.exit_code == 1, result.output
        assert result.stderr.startswith(message), result.stderr
        assert result.stdout == "" and "Traceback" not in result.output


def test_click_still_refuses_what_it_checks_itself_as_usage() -> None:
    result = CliRunner().invoke(main, ["search", "tea", "--limit", "0"])
    assert result.exit_code == 2 and "--limit" in result.stderr


def test_every_tenant_option_is_the_shared_one() -> None:
    """One spelling of --tenant: every command taking a tenant uses tenant_option."""

    def commands(group: click.Group) -> Iterator[click.Command]:
        for command in group.commands.values():
            yield command
            if isinstance(command, click.Group):
                yield from commands(command)

    tenant_params = [
        (command.name, param)
        for command in commands(main)
        for param in command.params
        if param.name == "tenant"
    ]
    assert len(tenant_params) >= 10
    for name, param in tenant_params:
        assert isinstance(param, click.Option) and param.opts == ["--tenant"], name
        assert param.metavar == "TENANT" and param.default is None and param.help, name
