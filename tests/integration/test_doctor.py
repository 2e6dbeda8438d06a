"""The doctor: real database, real embedder; faults are made for real (rows, a dead port)."""

from __future__ import annotations

from click.testing import CliRunner
from psycopg import sql

from app.cli import main
from app.config import Settings
from app.db import Database
from app.providers.embedder import Embedder
from app.services.access.keys import KeyIn, create_key
from app.services.graph import operations
from app.services.graph.age import graph_name
from app.services.graph.models import RecordIn
from app.services.ops.doctor import Diagnosis, diagnose
from app.services.runtime import Elephant
from tests.conftest import free_port


def _levels(report: Diagnosis) -> dict[str, str]:
    return {check.name: check.level for check in report.checks}


def test_without_a_key_nobody_can_call_the_api(elephant: Elephant) -> None:
    report = diagnose(elephant)
    keys = next(check for check in report.checks if check.name == "api keys")
    assert keys.level == "warn" and "elephant keys create" in keys.detail


def test_a_healthy_install_is_ok(elephant: Elephant, db: Database) -> None:
    create_key(db, KeyIn(tenant="doctor", scopes=["read"]))
    report = diagnose(elephant)
    levels = _levels(report)
    assert report.status == "ok", report
    assert {"database", "schema", "embedding dimension", "age", "pg_textsearch", "embedder",
            "failed jobs", "stuck jobs", "vectors", "passages", "api keys",
            "graph isolation", "reranker"} <= set(levels)  # fmt: skip


def test_failed_jobs_and_missing_vectors_are_warnings(elephant: Elephant, db: Database) -> None:
    with db.tenant("doctor") as conn:
        conn.execute(
            "INSERT INTO jobs (tenant_id, kind, payload, status, max_attempts) "
            "VALUES ('doctor', 'extract_facts', '{}', 'failed', 1)"
        )
        conn.execute(
            "INSERT INTO memories (tenant_id, kind, text, content_hash) "
            "VALUES ('doctor', 'note', 'waiting for a vector', 'doctor-h1')"
        )
    try:
        report = diagnose(elephant)
        levels = _levels(report)
        assert report.status == "warn"
        assert levels["failed jobs"] == "warn" and levels["vectors"] == "warn"
        details = {c.name: c.detail for c in report.checks}
        assert details["failed jobs"].startswith("1 failed")
        assert details["vectors"].startswith("1 memories and 0 facts")
    finally:
        with db.tenant("doctor") as conn:
            conn.execute("DELETE FROM jobs WHERE tenant_id = 'doctor'")
            conn.execute("DELETE FROM memories WHERE tenant_id = 'doctor'")


def test_turns_without_passages_are_a_warning(elephant: Elephant, db: Database) -> None:
    with db.tenant("doctor") as conn:
        row = conn.execute(
            "INSERT INTO conversations (tenant_id) VALUES ('doctor') RETURNING id"
        ).fetchone()
        assert row is not None
        conn.execute(
            "INSERT INTO turns (tenant_id, conversation_id, seq, speaker, text) "
            "VALUES ('doctor', %s, 0, 'Maya', 'stored before passages existed')",
            (row[0],),
        )
    try:
        check = next(c for c in diagnose(elephant).checks if c.name == "passages")
        assert check.level == "warn" and check.detail.startswith("1 turns wait")
    finally:
        with db.tenant("doctor") as conn:
            conn.execute("DELETE FROM conversations WHERE tenant_id = 'doctor'")
    check = next(c for c in diagnose(elephant).checks if c.name == "passages")
    assert check.level == "ok"


def test_an_unreachable_reranker_is_a_warning(
    settings: Settings, db: Database, embedder: Embedder
) -> None:
    reranker = settings.reranker.model_copy(
        update={"enabled": True, "url": f"http://127.0.0.1:{free_port()}", "timeout_s": 1.0}
    )
    runtime = Elephant(
        settings=settings.model_copy(update={"reranker": reranker}),
        db=db,
        embedder=embedder,
        llm=None,
    )
    try:
        report = diagnose(runtime)
        assert _levels(report)["reranker"] == "warn"
        assert report.status == "warn"
    finally:
        runtime.close_providers()


def test_cli_doctor_prints_every_check(settings: Settings, db: Database) -> None:
    env = {
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
    }
    result = CliRunner().invoke(main, ["doctor", "--database-only"], env=env)
    assert result.exit_code == 0, result.output
    assert "ok    schema: at " in result.output and result.output.strip().endswith("status: ok")
    assert "api:" not in result.output


def test_cli_doctor_fails_when_no_server_runs(settings: Settings, db: Database) -> None:
    """The doctor's exit code says whether the service is healthy: with no `elephant serve`
    for the data dir the API is down, whatever the database says."""
    env = {
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
    }
    result = CliRunner().invoke(main, ["doctor"], env=env)
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert lines[0].startswith("FAIL  api: not running: no elephant serve on the data dir")
    assert "--database-only" in lines[0]
    assert "ok    schema: at " in result.output  # the database is still checked
    assert lines[-1] == "status: fail"


def test_a_graph_table_without_row_level_security_fails(elephant: Elephant, db: Database) -> None:
    request = RecordIn.model_validate({"entities": [{"name": "Probe"}]})
    operations.record(elephant, "doctor-graph", request)
    table = sql.Identifier(graph_name("doctor-graph"), "Entity")
    with db.admin_connection() as conn:
        conn.execute(sql.SQL("ALTER TABLE {} NO FORCE ROW LEVEL SECURITY").format(table))
    try:
        report = diagnose(elephant)
    finally:
        with db.admin_connection() as conn:
            conn.execute(sql.SQL("ALTER TABLE {} FORCE ROW LEVEL SECURITY").format(table))
    check = next(check for check in report.checks if check.name == "graph isolation")
    assert check.level == "fail" and "1 graph tables" in check.detail
    assert report.status == "fail"
