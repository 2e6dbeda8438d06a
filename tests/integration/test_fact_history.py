"""A fact's history: its two time ranges, the supersession chain both ways and the
contradictions along it, from the service and from GET /facts/{id}/history.

Seeded through the real commit path (offline extractor, offline contradiction rules)
on this module's database.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any
from uuid import UUID, uuid4

import pytest
from litestar.testing import TestClient

from app.config import Settings
from app.errors import NotFound
from app.services.access.keys import KeyIn, create_key
from app.services.facts import history as fact_history
from app.services.memory import records
from app.services.memory.commit import commit_note
from app.services.memory.schemas import NoteIn
from app.services.runtime import Elephant
from tests.conftest import api_client

Client = TestClient  # type: ignore[type-arg]
TENANT = "history"
MOVES = (
    ("Alice lives in Berlin", "2019-05-01"),
    ("Alice moved to Lisbon", "2022-09-01"),
    ("Alice moved to Porto", "2025-02-01"),
)


def seed_moves(elephant: Elephant, tenant: str) -> list[str]:
    """The three residences in order; returns the fact id of each (oldest first). Forced:
    the gate finds the third move too like the second to be worth keeping."""
    ids = []
    for text, day in MOVES:
        when = datetime.fromisoformat(day + "T00:00:00+00:00")
        note = NoteIn(text=text, occurred_at=when, force=True)
        result = commit_note(elephant, tenant, note, wait=True)
        assert result.status == "stored" and result.facts, result
        with elephant.db.tenant(tenant) as conn:
            row = conn.execute(
                "SELECT id::text FROM facts WHERE memory_id = %s", (result.memory_id,)
            ).fetchone()
        assert row is not None
        ids.append(str(row[0]))
    return ids


@pytest.fixture(scope="module")
def moves(elephant: Elephant) -> list[str]:
    return seed_moves(elephant, TENANT)


@pytest.fixture(scope="module")
def reader(settings: Settings, elephant: Elephant) -> Iterator[Client]:
    key = create_key(elephant.db, KeyIn(tenant=TENANT, scopes=["read"], name="reader")).key
    with api_client(settings, elephant, key) as client:
        client.headers["X-Elephant-Tenant"] = TENANT
        yield client


def test_the_middle_fact_shows_what_it_replaced_and_what_replaced_it(
    elephant: Elephant, moves: list[str]
) -> None:
    berlin, lisbon, porto = moves
    found = fact_history.history(elephant, TENANT, UUID(lisbon))
    assert found.fact.id == lisbon and found.fact.status == "superseded"
    assert [(link.step, link.id) for link in found.chain] == [(-1, berlin), (0, lisbon), (1, porto)]
    assert [link.status for link in found.chain] == ["superseded", "superseded", "active"]
    assert found.chain[0].superseded_by == lisbon and found.chain[1].superseded_by == porto
    assert not found.truncated
    # when it was true: Lisbon from the move until the move to Porto; known until then
    middle = found.chain[1]
    assert middle.valid_from is not None and middle.valid_from.date().isoformat() == "2022-09-01"
    assert middle.valid_to is not None and middle.valid_to.date().isoformat() == "2025-02-01"
    assert middle.expired_at is not None and middle.expired_at >= middle.recorded_at
    assert found.chain[2].valid_to is None and found.chain[2].expired_at is None

    by_pair = {(c.older_id, c.newer_id): c for c in found.contradictions}
    assert set(by_pair) == {(berlin, lisbon), (lisbon, porto)}
    first, second = by_pair[(berlin, lisbon)], by_pair[(lisbon, porto)]
    assert first.detector == "offline" and 0 < first.score <= 1
    assert first.reason == "different residence: 'Berlin' vs 'Lisbon'"
    assert first.role == "newer" and second.role == "older"
    assert second.reason == "different residence: 'Lisbon' vs 'Porto'"
    assert [c.id for c in found.contradictions] == sorted(
        (c.id for c in found.contradictions), reverse=True
    )


def test_the_ends_of_the_chain_see_the_whole_chain(elephant: Elephant, moves: list[str]) -> None:
    berlin, lisbon, porto = moves
    first = fact_history.history(elephant, TENANT, UUID(berlin))
    assert [(link.step, link.id) for link in first.chain] == [(0, berlin), (1, lisbon), (2, porto)]
    last = fact_history.history(elephant, TENANT, UUID(porto))
    assert [(link.step, link.id) for link in last.chain] == [(-2, berlin), (-1, lisbon), (0, porto)]
    assert {c.role for c in last.contradictions} == {"newer", "other"}


def test_a_fact_alone_has_a_chain_of_itself(elephant: Elephant) -> None:
    note = NoteIn(text="Bruno's favourite tram is the number 28 in Lisbon")
    result = commit_note(elephant, TENANT, note, wait=True)
    with elephant.db.tenant(TENANT) as conn:
        row = conn.execute(
            "SELECT id FROM facts WHERE memory_id = %s LIMIT 1", (result.memory_id,)
        ).fetchone()
    assert row is not None
    alone = fact_history.history(elephant, TENANT, row[0])
    assert [link.step for link in alone.chain] == [0] and alone.contradictions == []


def test_another_tenants_fact_is_not_found(elephant: Elephant, moves: list[str]) -> None:
    with pytest.raises(NotFound):
        fact_history.history(elephant, "history-other", UUID(moves[0]))
    with pytest.raises(NotFound):
        fact_history.history(elephant, TENANT, uuid4())


def test_the_history_endpoint_needs_read_scope_only(reader: Client, moves: list[str]) -> None:
    berlin, lisbon, porto = moves
    answer = reader.get(f"/facts/{lisbon}/history")
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    assert body["fact"]["id"] == lisbon and body["truncated"] is False
    assert [link["id"] for link in body["chain"]] == [berlin, lisbon, porto]
    assert body["chain"][1]["valid_to"].startswith("2025-02-01T00:00:00")
    assert body["chain"][1]["valid_to"].endswith("Z")
    reasons = {c["reason"] for c in body["contradictions"]}
    assert "different residence: 'Berlin' vs 'Lisbon'" in reasons
    missing = reader.get(f"/facts/{uuid4()}/history")
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"


def test_facts_filter_by_subject_type_and_the_time_they_were_true(
    elephant: Elephant, moves: list[str], reader: Client
) -> None:
    """GET /facts?subject=&fact_type=&as_of= (and the service): as_of gives the facts true
    then, superseded since or not, as search's as_of filter does."""
    berlin, lisbon, porto = moves
    for day, expected in (("2020-01-01", berlin), ("2023-06-30", lisbon), ("2026-01-01", porto)):
        answer = reader.get("/facts", params={"subject": "alice", "as_of": day})
        assert answer.status_code == 200, answer.text
        assert [item["id"] for item in answer.json()["items"]] == [expected], day
    assert reader.get("/facts", params={"as_of": "2010-01-01"}).json()["items"] == []
    every = records.list_facts(elephant, TENANT, subject="ALICE")
    assert {fact.id for fact in every.items} == {berlin, lisbon, porto}
    kinds = {fact.fact_type for fact in every.items}
    assert len(kinds) == 1
    (kind,) = kinds
    assert records.list_facts(elephant, TENANT, subject="alice", fact_type=kind).total == 3
    other = next(t for t in ("world", "experience", "inference") if t != kind)
    assert records.list_facts(elephant, TENANT, subject="alice", fact_type=other).total == 0
    assert records.list_facts(elephant, TENANT, subject="Bob").total == 0
    refused = reader.get("/facts", params={"fact_type": "rumour"})
    assert refused.status_code in (400, 422) and "fact_type" in refused.text
    assert reader.get("/facts", params={"as_of": "not a date"}).status_code in (400, 422)
