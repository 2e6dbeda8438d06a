"""The BM25 keyword lane finds every stored row after restarts (clean, kill -9 of the
postmaster, kill -9 of the app), and a probe that finds it missing rows switches search
to the tsvector lane, says so in /health, and rebuilds it (app/db/keyword_index.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest

from app.config import Settings
from app.db import Database
from app.db.embedded import EmbeddedPostgres
from app.db.keyword_index import KeywordState, documents_counted, indexed_documents
from app.providers.embedder import Embedder
from app.services.ops.health import health
from app.services.retrieval.schemas import SearchRequest
from app.services.retrieval.search import keyword_engine, search
from app.services.runtime import Elephant
from tests.conftest import needs_bm25

pytestmark = [needs_bm25, pytest.mark.slow]

T = "kw"
BATCH = 12


def token(n: int) -> str:
    return f"zq{n}x"  # one word per row, held by no other row


def write_rows(db: Database, first: int, count: int) -> None:
    """Notes ``first`` .. ``first + count - 1``, then an update of a third of them and a
    VACUUM (index churn, as dedup and feedback cause)."""
    with db.tenant(T) as conn:
        for n in range(first, first + count):
            conn.execute(
                "INSERT INTO memories (tenant_id, kind, text, content_hash) "
                "VALUES (%s, 'note', %s, %s)",
                (T, f"Note {n}: {token(n)} tunes harpsichords in Gdansk.", f"kw{n}"),
            )
        conn.execute(
            "UPDATE memories SET text = text || ' Again.' WHERE content_hash = ANY(%s)",
            ([f"kw{n}" for n in range(first, first + count, 3)],),
        )
    with db.admin_connection() as conn:
        conn.execute("VACUUM memories")


def missing_rows(db: Database, rows: int) -> list[int]:
    """Rows the BM25 lane (as the app role, under row-level security) does not rank first
    for their own word."""
    missing = []
    with db.tenant(T) as conn:
        for n in range(rows):
            hit = conn.execute(
                "SELECT text, text <@> to_bm25query(%s, 'memories_text_bm25') AS score "
                "FROM memories ORDER BY score LIMIT 1",
                (token(n),),
            ).fetchone()
            if hit is None or token(n) not in hit[0] or float(hit[1]) == 0:
                missing.append(n)
    return missing


def open_db(root: Path, **search: object) -> Database:
    db = Database(Settings.model_validate({"data_dir": str(root), "search": search}))
    db.open()
    return db


def kill_postmaster(db: Database) -> None:
    assert db.embedded is not None
    status = db.embedded.status()
    assert status is not None
    postmaster = psutil.Process(status.pid)
    family = [postmaster, *postmaster.children(recursive=True)]
    os.kill(status.pid, signal.SIGKILL)
    _, alive = psutil.wait_procs(family, timeout=30)
    assert not alive, f"postgres processes survived SIGKILL: {alive}"


APP_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from app.config import Settings
    from app.db import Database
    sys.path.insert(0, sys.argv[2])
    from tests.integration.test_keyword_index import write_rows
    db = Database(Settings.model_validate({"data_dir": sys.argv[1]}))
    db.open()
    write_rows(db, int(sys.argv[3]), int(sys.argv[4]))
    print("written", flush=True)
    time.sleep(600)
    """
)


def kill_app_after_writing(root: Path, first: int, count: int) -> None:
    """Another process (the app) writes rows, then dies by SIGKILL; the server stays up."""
    repo = Path(__file__).parents[2]
    app = subprocess.Popen(
        [sys.executable, "-c", APP_SCRIPT, str(root), str(repo), str(first), str(count)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=repo,
    )
    try:
        assert app.stdout is not None and app.stdout.readline().strip() == "written"
    finally:
        app.kill()
        app.wait(timeout=10)


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    EmbeddedPostgres(tmp_path / "embedded").stop()


def test_every_row_is_found_after_restarts_and_kills(root: Path) -> None:
    db = open_db(root)
    rows = 0
    write_rows(db, rows, BATCH)
    rows += BATCH
    assert missing_rows(db, rows) == []
    for cycle in ("clean", "clean", "clean", "kill -9 postmaster", "kill -9 app", "clean"):
        if cycle == "kill -9 postmaster":
            kill_postmaster(db)
            db.close()
        elif cycle == "kill -9 app":
            db.close()  # the server stops; the app below starts it and dies holding it
            kill_app_after_writing(root, rows, BATCH)
            rows += BATCH
        else:
            db.close()
        assert cycle == "kill -9 app" or EmbeddedPostgres(root / "embedded").status() is None
        db = open_db(root)
        assert db.keyword.trusted, (cycle, db.keyword.state)
        assert missing_rows(db, rows) == [], f"after {cycle}"
        write_rows(db, rows, BATCH)
        rows += BATCH
        assert missing_rows(db, rows) == [], f"written after {cycle}"
    with db.admin_connection() as conn:
        documents = indexed_documents(conn, "memories_text_bm25")
    assert documents is not None and documents >= rows  # (updated rows count until merged)
    db.close()


def test_without_the_rebuild_the_probe_catches_the_loss_and_start_up_repairs_it(
    root: Path,
) -> None:
    """The upstream bug, shown: an index created on an empty table finds nothing after a
    restart. With the rebuild at restart off, the start-up probe still catches it."""
    db = open_db(root, bm25_rebuild_on_restart=False)
    write_rows(db, 0, BATCH)
    db.close()
    server = EmbeddedPostgres(root / "embedded")
    server.start()
    with psycopg.connect(server.conninfo(dbname="elephant"), autocommit=True) as conn:
        assert indexed_documents(conn, "memories_text_bm25") == 0  # pg_textsearch 1.0.0
    server.release()
    db = open_db(root, bm25_rebuild_on_restart=False)
    try:
        state = db.keyword.state
        assert state.trusted and "memories_text_bm25" in state.rebuilt
        assert "probe failed" in (state.rebuilt_because or "")
        assert missing_rows(db, BATCH) == []
    finally:
        db.close()


def test_an_untrusted_index_sends_search_to_tsvector_and_health_says_so(
    root: Path, embedder: Embedder
) -> None:
    db = open_db(root, bm25_rebuild_on_restart=False)
    elephant = Elephant(settings=db.settings, db=db, embedder=embedder, llm=None)
    try:
        write_rows(db, 0, BATCH)
        request = SearchRequest(query=token(3), explain=True)
        found = search(elephant, T, request, record_access=False)
        assert found.explain is not None and found.explain.keyword_engine == "bm25"
        assert found.hits[0].ranks.keyword == 1

        # A server restarted under the app, not by it: nothing rebuilt the index.
        assert db.embedded is not None
        db.embedded.stop()
        db.embedded.start()
        state = db.keyword.check(max_age_s=0)
        assert not state.trusted and state.repairing
        assert any("no documents" in p.reason for p in state.probes if not p.ok)
        db.keyword.wait_for_repair()
        assert db.keyword.check(max_age_s=0).trusted
        assert missing_rows(db, BATCH) == []

        # While untrusted, search ranks keywords with tsvector and /health is degraded.
        db.keyword.state = KeywordState(trusted=False)
        db.keyword.state.repairing = True  # as while a rebuild runs: no new probe
        assert keyword_engine(elephant) == "tsvector"
        found = search(elephant, T, request, record_access=False)
        assert found.explain is not None and found.explain.keyword_engine == "tsvector"
        assert found.hits[0].ranks.keyword == 1
        report = health(db)
        assert report.status == "degraded" and report.database.keyword_search == "tsvector"
    finally:
        elephant.close_providers()
        db.close()


def test_statistics_that_kept_only_the_count_are_treated_as_lost() -> None:
    """After VACUUM under updates: total_docs kept, total_len 0, and BM25 finds nothing."""
    summary = (
        "Index: facts_text_bm25\n\nCorpus Statistics:\n  total_docs: 201\n"
        "  total_len: 0\n  avg_doc_len: 0.00\n"
    )
    assert documents_counted(summary) == 0
    healthy = summary.replace("total_len: 0", "total_len: 1474")
    assert documents_counted(healthy) == 201
    assert documents_counted("no statistics here") is None


def _server_started_record(db: Database) -> list[tuple[object, ...]]:
    with db.admin_connection() as conn:
        return conn.execute("SELECT index_name FROM keyword_index_repairs").fetchall()


def _sessions_of(db: Database) -> set[int]:
    with db.admin_connection() as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND pid <> "
            "pg_backend_pid()",
            (db.application_name,),
        ).fetchall()
    return {int(pid) for (pid,) in rows}


def test_a_serving_start_never_waits_for_the_rebuild_lock(root: Path) -> None:
    """An outside session holding the rebuild's advisory lock delays the rebuild, never the
    start: the lane starts untrusted (tsvector) and is rebuilt once the lock is free."""
    db = open_db(root)
    write_rows(db, 0, BATCH)
    db.close()
    server = EmbeddedPostgres(root / "embedded")
    server.start()  # a new server start: every index needs its rebuild
    try:
        with psycopg.connect(server.conninfo(dbname="elephant"), autocommit=True) as outside:
            outside.execute("SELECT pg_advisory_lock(%s)", (0x454C4B57,))
            settings = Settings.model_validate({"data_dir": str(root)})
            serving = Database(settings, keyword_repairs="background")
            started = time.monotonic()
            serving.open()
            took = time.monotonic() - started
            try:
                state = serving.keyword.state
                assert took < 15, f"the start waited {took:.1f} s"
                assert not state.trusted and state.repairing
                assert health(serving).status == "degraded"  # answers, on the tsvector lane
                time.sleep(1)
                assert serving.keyword.state.repairing  # still waiting for the lock
                outside.execute("SELECT pg_advisory_unlock(%s)", (0x454C4B57,))
                serving.keyword.wait_for_repair()
                state = serving.keyword.state
                assert state.trusted and "memories_text_bm25" in state.rebuilt, state
                assert missing_rows(serving, BATCH) == []
            finally:
                serving.close()
    finally:
        server.release()


def test_a_command_beside_a_server_reports_and_never_repairs(root: Path) -> None:
    """A CLI command's Database (``report``) on a server another process started: a stale
    index is reported, not rebuilt, and the other process's sessions live on."""
    owner = open_db(root)
    try:
        write_rows(owner, 0, BATCH)
        with owner.admin_connection() as conn:
            conn.execute("DELETE FROM keyword_index_repairs")
        before = _sessions_of(owner)
        assert before, "the owner's pool sessions carry its application_name"
        command = Database(
            Settings.model_validate({"data_dir": str(root)}), keyword_repairs="report"
        )
        command.open()
        try:
            state = command.keyword.state
            assert command.embedded is not None and command.embedded.adopted
            assert not state.trusted and not state.repairing
            assert "elephant serve" in (state.error or ""), state
            assert command.keyword.check(max_age_s=0).repairing is False
            assert _server_started_record(command) == []  # nothing rebuilt
        finally:
            command.close()
        assert before <= _sessions_of(owner), "the owner's sessions were ended"
    finally:
        owner.close()
