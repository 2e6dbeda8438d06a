"""pg_textsearch loses its corpus statistics at restart; Database.open() repairs them."""

from __future__ import annotations

from pathlib import Path

import psycopg

from app.config import Settings
from app.db import Database
from app.db.embedded import EmbeddedPostgres
from app.db.repair import documents_counted, indexed_documents


def test_restart_then_open_rebuilds_lost_bm25_statistics(tmp_path: Path) -> None:
    settings = Settings.model_validate({"data_dir": str(tmp_path)})
    db = Database(settings)
    db.open()
    try:
        with db.tenant("bm") as conn:
            for n, text in enumerate(["the violin recital in Leeds", "a cello lesson", "rain"]):
                conn.execute(
                    "INSERT INTO memories (tenant_id, kind, text, content_hash) "
                    "VALUES ('bm', 'note', %s, %s)",
                    (text, f"h{n}"),
                )
        assert db.repaired_indexes == []
    finally:
        db.close()

    server = EmbeddedPostgres(tmp_path / "embedded")
    assert server.status() is None  # cleanly stopped
    server.start()
    with psycopg.connect(server.conninfo(dbname="elephant"), autocommit=True) as conn:
        assert indexed_documents(conn, "memories_text_bm25") == 0  # the upstream bug
        top = conn.execute(
            "SELECT count(*) FROM (SELECT id FROM memories "
            "ORDER BY text <@> to_bm25query('violin', 'memories_text_bm25') LIMIT 5) AS hits"
        ).fetchone()
    server.release()

    again = Database(settings)
    again.open()
    try:
        assert "memories_text_bm25" in again.repaired_indexes
        with again.admin_connection() as conn:
            assert indexed_documents(conn, "memories_text_bm25") == 3
            repaired = conn.execute(
                "SELECT text FROM memories "
                "ORDER BY text <@> to_bm25query('violin', 'memories_text_bm25') LIMIT 1"
            ).fetchone()
    finally:
        again.close()
    assert top is not None
    assert repaired == ("the violin recital in Leeds",)


def test_statistics_that_kept_only_the_count_are_treated_as_lost() -> None:
    """Seen after a restart: total_docs survived but total_len read 0, and BM25 found
    nothing; the repair must rebuild that index too."""
    summary = (
        "Index: facts_text_bm25\n\nCorpus Statistics:\n  total_docs: 201\n"
        "  total_len: 0\n  avg_doc_len: 0.00\n"
    )
    assert documents_counted(summary) == 0
    healthy = summary.replace("total_len: 0", "total_len: 1474")
    assert documents_counted(healthy) == 201
    assert documents_counted("no statistics here") is None
