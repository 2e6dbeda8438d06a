"""Erased bytes leave the data files only when the tables are rewritten (issue 39,
reproduction 7): after an erasure, the procedure docs/erasure.md gives (ANALYZE, VACUUM
FULL, CHECKPOINT) leaves no byte of the erased text in any file of the database's
directory, heap, TOAST, index (HNSW, GIN, BM25) or catalog (pg_statistic) alike. A plain
VACUUM does not: its count is recorded here, not asserted (what it leaves depends on
the pages' history)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from litestar.testing import TestClient

from app.db import Database
from app.services.runtime import Elephant
from tests.conftest import api_client

Client = TestClient  # type: ignore[type-arg]
TENANT, OTHER = "disk-a", "disk-b"
CANARY = "Vrexomund Plaistow"
NEEDLES = (b"rexomund", b"REXOMUND", b"laistow")  # any case, stemmed or not (tsvector, bm25)
TURNS = (
    (CANARY, "I moved the survey boat to the inner harbour."),
    ("Dana", f"Thanks {CANARY}, the mooring fee is paid until June."),
    ("Omar", "The weather looks fine for a dive on Saturday."),
)


@pytest.fixture(scope="module")
def client(settings: Any, elephant: Elephant) -> Iterator[Client]:
    with api_client(settings, elephant) as http:
        yield http


def call(client: Client, path: str, tenant: str, body: Any) -> Any:
    response = client.post(
        path, json=body, params={"wait": "true"}, headers={"X-Elephant-Tenant": tenant}
    )
    assert response.status_code < 300, response.text
    return response.json()


# docs/erasure.md, "On disk": ANALYZE keeps the old statistics of a table left empty
# (memory_entities, when the erased subject's were the only entity links).
FORGET_EMPTY_STATISTICS = (
    "DELETE FROM pg_statistic WHERE starelid IN (SELECT oid FROM pg_class "
    "WHERE relnamespace = 'public'::regnamespace AND relkind = 'r' AND reltuples = 0)"
)


def files_holding_canary(db: Database) -> list[str]:
    """The files of the database's directory (base/<oid>/) that hold the canary's bytes."""
    assert db.embedded is not None
    with db.admin_connection() as conn:
        row = conn.execute(
            "SELECT oid FROM pg_database WHERE datname = current_database()"
        ).fetchone()
    assert row is not None
    folder = db.embedded.pgdata / "base" / str(row[0])
    found = []
    for path in sorted(folder.iterdir()):
        data = path.read_bytes() if path.is_file() else b""
        if any(needle in data for needle in NEEDLES):
            found.append(path.name)
    return found


def run(db: Database, *statements: str) -> None:
    with psycopg.connect(db.admin_conninfo(), autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def test_vacuum_full_removes_erased_bytes_from_the_data_files(
    client: Client, elephant: Elephant, record_property: Any
) -> None:
    for tenant in (TENANT, OTHER):
        call(client, "/commit", tenant, {"text": "The marina opens at seven on weekdays."})
    call(client, "/commit", TENANT, {"text": f"{CANARY} keeps the logbook of every dive."})
    turns = [{"speaker": s, "text": t, "id": f"T{n}"} for n, (s, t) in enumerate(TURNS)]
    body = {"turns": turns, "session_date": "2024-05-08", "conversation_id": "boat-1"}
    call(client, "/commit_conversation", TENANT, body)
    call(client, "/graph/record", TENANT, {"entities": [{"name": CANARY, "entity_type": "person"}]})
    # Statistics too: ANALYZE copies column values into pg_statistic.
    run(elephant.db, "ANALYZE", "CHECKPOINT")
    assert files_holding_canary(elephant.db), "the canary never reached the data files"

    report = call(client, "/erase", TENANT, {"subject": CANARY})
    assert report["total"] > 0
    run(elephant.db, "VACUUM", "CHECKPOINT")
    after_vacuum = files_holding_canary(elephant.db)
    record_property("files_after_plain_vacuum", len(after_vacuum))

    run(elephant.db, "ANALYZE", FORGET_EMPTY_STATISTICS, "VACUUM FULL", "CHECKPOINT")
    assert files_holding_canary(elephant.db) == []
    # The server goes on: the other tenant and the tenant's other rows still search.
    found = client.get(
        "/search", params={"q": "marina opens"}, headers={"X-Elephant-Tenant": OTHER}
    )
    assert found.status_code == 200 and found.json()["results"], found.text


def test_the_data_dir_is_where_the_test_looks(elephant: Elephant) -> None:
    """Guard: the scan reads the database's own folder, which holds its tables."""
    assert elephant.db.embedded is not None
    with elephant.db.admin_connection() as conn:
        row = conn.execute("SELECT pg_relation_filepath('memories')").fetchone()
    assert row is not None
    assert (elephant.db.embedded.pgdata / Path(str(row[0]))).is_file()
