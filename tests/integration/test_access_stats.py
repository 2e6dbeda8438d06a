"""Access statistics are written aside, in batches: what searches used reaches access_stats
(never the memory or fact rows), survives a database outage, follows erasure and merges,
and an erased tenant is not brought back by a late batch."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from uuid import UUID

import pytest

from app.config import Settings
from app.db import Database
from app.db.embedded import EmbeddedPostgres
from app.providers.embedder import Embedder
from app.services.access.erasure import EraseIn, erase
from app.services.memory.commit import commit_note
from app.services.memory.schemas import NoteIn
from app.services.retrieval.access_stats import AccessRecorder
from app.services.retrieval.schemas import SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant
from app.services.transfer.export import export_to_path
from app.services.transfer.importer import import_tenant
from tests.conftest import refusable_database

T = "uses"


def note(elephant: Elephant, text: str, tenant: str = T) -> str:
    result = commit_note(elephant, tenant, NoteIn(text=text, force=True))
    assert result.memory_id is not None
    return result.memory_id


def uses(db: Database, tenant: str, item: str) -> int | None:
    with db.tenant(tenant) as conn:
        row = conn.execute(
            "SELECT access_count FROM access_stats WHERE item_id = %s", (item,)
        ).fetchone()
    return None if row is None else int(row[0])


def test_many_uses_are_one_batch_and_add_up(elephant: Elephant) -> None:
    first, second = note(elephant, "Ines tunes pianos."), note(elephant, "Ines bakes rye.")
    recorder = AccessRecorder(elephant.db, flush_seconds=600)  # only flush() writes
    try:
        for _ in range(500):
            recorder.record(T, [first, second], [])
        recorder.record(T, [first], [])
        assert uses(elephant.db, T, first) is None  # nothing written per use
        assert recorder.pending_items == 2
        recorder.flush()
        assert recorder.batches_written == 1 and recorder.pending_items == 0
        assert (uses(elephant.db, T, first), uses(elephant.db, T, second)) == (501, 500)
        recorder.record(T, [first], [])
    finally:
        recorder.close()  # writes what waits
    assert uses(elephant.db, T, first) == 502


def test_the_background_thread_writes_within_its_interval(elephant: Elephant) -> None:
    item = note(elephant, "Jonas repairs clocks in Ghent.")
    recorder = AccessRecorder(elephant.db, flush_seconds=0.2)
    try:
        recorder.record(T, [item], [])
        deadline = time.monotonic() + 10
        while uses(elephant.db, T, item) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert uses(elephant.db, T, item) == 1
    finally:
        recorder.close()


def test_search_hits_are_counted_and_read_back(elephant: Elephant) -> None:
    item = note(elephant, "Kofi grows chillies on his balcony in Accra.")
    request = SearchRequest(query="chillies balcony Accra", limit=1)
    for _ in range(3):
        assert search(elephant, T, request).hits[0].id == item
    search(elephant, T, request, record_access=False)  # looking, not using
    elephant.access.flush()
    assert uses(elephant.db, T, item) == 3


def test_a_batch_kept_through_an_outage(
    pg_server: EmbeddedPostgres,
    new_database: Callable[..., str],
    settings: Settings,
    embedder: Embedder,
) -> None:
    with refusable_database(pg_server, new_database, settings, "access_outage") as found:
        own, database, refuse = found
        runtime = Elephant(settings=own, db=database, embedder=embedder, llm=None)
        item = note(runtime, "Lena keeps bees on the roof.", "outage")
        recorder = AccessRecorder(database, flush_seconds=600)
        try:
            recorder.record("outage", [item], [])
            refuse(True)
            recorder.flush()  # fails, keeps the batch
            assert recorder.pending_items == 1
            refuse(False)
            deadline = time.monotonic() + 30
            while recorder.pending_items and time.monotonic() < deadline:
                time.sleep(0.5)  # the pool and recovery notice the database is back
                recorder.flush()
            assert uses(database, "outage", item) == 1
        finally:
            recorder.close()
            runtime.close_providers()


def test_erased_rows_lose_their_statistics_and_late_uses_are_skipped(
    elephant: Elephant,
) -> None:
    kept, gone = note(elephant, "Mira paints boats."), note(elephant, "Mira sails at dawn.")
    elephant.access.record(T, [kept, gone], [])
    elephant.access.flush()
    assert uses(elephant.db, T, gone) == 1
    erase(elephant, T, EraseIn(memory_ids=[UUID(gone)]))
    assert uses(elephant.db, T, gone) is None  # the trigger dropped its row
    elephant.access.record(T, [gone, kept], [])  # a search that ran before the erasure
    elephant.access.flush()
    assert uses(elephant.db, T, gone) is None and uses(elephant.db, T, kept) == 2


def test_a_late_batch_does_not_bring_an_erased_tenant_back(elephant: Elephant) -> None:
    item = note(elephant, "Nadia collects maps.", "brief")
    recorder = AccessRecorder(elephant.db, flush_seconds=600)
    try:
        recorder.record("brief", [item], [])  # waits while the tenant is erased
        erase(elephant, "brief", EraseIn(tenant=True))
        recorder.flush()
    finally:
        recorder.close()
    with elephant.db.admin_connection() as conn:
        row = conn.execute("SELECT count(*) FROM tenants WHERE id = 'brief'").fetchone()
        left = conn.execute("SELECT count(*) FROM access_stats WHERE tenant_id = 'brief'")
        assert row == (0,) and left.fetchone() == (0,)


@pytest.mark.parametrize("record", [True, False])
def test_no_search_writes_a_memory_row(elephant: Elephant, record: bool) -> None:
    """Recorded or not, searching leaves every memory and fact row as it was (xmin)."""
    note(elephant, "Oskar restores harpsichords in Gdansk.", "still")
    note(elephant, "Oskar's workshop is by the river.", "still")

    def versions() -> list[tuple[str, str]]:
        with elephant.db.admin_connection() as conn:
            rows = conn.execute(
                "SELECT id::text, xmin::text FROM memories WHERE tenant_id = 'still' "
                "UNION ALL SELECT id::text, xmin::text FROM facts WHERE tenant_id = 'still' "
                "ORDER BY 1"
            ).fetchall()
        return [(str(a), str(b)) for a, b in rows]

    before = versions()
    for query in ("harpsichords", "Where is Oskar's workshop?", "Gdansk"):
        search(elephant, "still", SearchRequest(query=query), record_access=record)
    elephant.access.flush()
    assert versions() == before


def test_use_counts_travel_with_an_export_and_follow_new_ids(
    elephant: Elephant, tmp_path: Path
) -> None:
    item = note(elephant, "Pia restores sailing dinghies in Kiel.", "moving")
    if elephant.graph is not None:
        elephant.graph.ensure("moving")  # an export reads the tenant's graph too
    elephant.access.record("moving", [item, item], [])
    elephant.access.flush()
    path = tmp_path / "moving.jsonl"
    export_to_path(elephant, "moving", path)
    import_tenant(elephant, path, "moved", new_ids=True)
    with elephant.db.tenant("moved") as conn:
        rows = conn.execute(
            "SELECT a.item_id = m.id, a.access_count FROM access_stats AS a "
            "LEFT JOIN memories AS m ON m.id = a.item_id"
        ).fetchall()
    assert rows == [(True, 2)]  # the copy's own memory, not the original's id
