"""Notes have a subject (who "I" is) and their dates are anchored to when they were written.

Over HTTP and MCP on the real database and embedder, offline extraction (no LLM)
unless a test scripts one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Any

import pytest
from fastmcp import Client
from litestar.testing import TestClient

from app.config import Settings
from app.mcp.server import build_server
from app.prompts import extract_facts
from app.services.access.keys import KeyIn, create_key
from app.services.facts.model import TurnInput
from app.services.jobs.runner import drain
from app.services.memory.commit import commit_note
from app.services.memory.schemas import NoteIn
from app.services.runtime import Elephant
from tests.conftest import api_client
from tests.fakes import ScriptedLLM

Client_ = TestClient  # type: ignore[type-arg]


@pytest.fixture(scope="module")
def client(settings: Settings, elephant: Elephant) -> Iterator[Client_]:
    with api_client(settings, elephant) as test_client:
        yield test_client


def commit(client: Client_, tenant: str, body: dict[str, Any], wait: bool = True) -> Any:
    response = client.post(
        "/commit",
        json=body,
        params={"wait": "true"} if wait else {},
        headers={"X-Elephant-Tenant": tenant},
    )
    assert response.status_code in (200, 201), response.text
    return response.json()


def facts_of(elephant: Elephant, tenant: str) -> list[tuple[Any, ...]]:
    """(text, subject, valid_from date, valid_to date, status, source_turn_ids) by text."""
    with elephant.db.tenant(tenant) as conn:
        return conn.execute(
            "SELECT text, subject, valid_from::date, valid_to::date, status, source_turn_ids "
            "FROM facts ORDER BY text"
        ).fetchall()


# ------------------------------------------------------------------ the subject


def test_an_explicit_subject_is_who_i_is(client: Client_, elephant: Elephant) -> None:
    body = commit(client, "subj-explicit", {"text": "I live in Paris.", "subject": "Ana"})
    assert body["status"] == "stored" and body["job_status"] == "done", body
    [fact] = facts_of(elephant, "subj-explicit")
    assert fact[:2] == ("Ana lives in Paris", "Ana")
    assert fact[5] == []  # a note has no turn ids, not "#0"


def test_the_tenant_owner_is_the_default_subject(client: Client_, elephant: Elephant) -> None:
    headers = {"X-Elephant-Tenant": "subj-owner"}
    assert client.put("/tenant/owner", json={"owner": "Bea"}, headers=headers).json() == {
        "owner": "Bea",
        "source": "tenant",
    }
    commit(client, "subj-owner", {"text": "My sister works at Airbus in Toulouse."})
    [fact] = facts_of(elephant, "subj-owner")
    assert fact[:2] == ("Bea's sister works at Airbus in Toulouse", "Bea")


def test_without_an_owner_the_setting_names_the_subject(
    client: Client_, elephant: Elephant
) -> None:
    assert elephant.settings.tenant.owner == "user"
    commit(client, "subj-default", {"text": "I adopted a cat called Miso."})
    [fact] = facts_of(elephant, "subj-default")
    assert fact[:2] == ("User adopted a cat called Miso", "user")


def test_a_note_about_someone_else_keeps_its_own_subject(
    client: Client_, elephant: Elephant
) -> None:
    commit(client, "subj-other", {"text": "Alice moved to Berlin in June 2024.", "subject": "Ana"})
    [fact] = facts_of(elephant, "subj-other")
    assert fact[:3] == ("Alice moved to Berlin in June 2024", "Alice", date(2024, 6, 1))


def test_bad_subjects_are_422(client: Client_) -> None:
    for subject in ("", "   ", "x" * 201, 7):
        response = client.post(
            "/commit",
            json={"text": "I live in Paris.", "subject": subject},
            headers={"X-Elephant-Tenant": "subj-bad"},
        )
        assert response.status_code == 422, subject
        assert "subject" in response.json()["message"]


def test_first_person_notes_contradict_like_conversations(
    client: Client_, elephant: Elephant
) -> None:
    tenant = "subj-contra"
    commit(client, tenant, {"text": "I live in Paris.", "subject": "Ana"})
    second = commit(client, tenant, {"text": "I moved to Berlin.", "subject": "Ana"})
    assert second["job_status"] == "done"
    facts = {row[0]: row for row in facts_of(elephant, tenant)}
    assert set(facts) == {"Ana lives in Paris", "Ana moved to Berlin"}
    paris, berlin = facts["Ana lives in Paris"], facts["Ana moved to Berlin"]
    assert paris[4] == "superseded" and paris[3] == berlin[2]  # closed when Berlin began
    assert berlin[3:5] == (None, "active")
    listing = client.get("/contradictions", headers={"X-Elephant-Tenant": tenant}).json()
    [item] = listing["contradictions"]
    assert (item["older"]["text"], item["newer"]["text"]) == (
        "Ana lives in Paris",
        "Ana moved to Berlin",
    )
    assert item["detector"] == "offline" and "residence" in item["reason"]


def test_different_subjects_do_not_contradict(client: Client_, elephant: Elephant) -> None:
    tenant = "subj-two"
    commit(client, tenant, {"text": "I live in Paris.", "subject": "Ana"})
    commit(client, tenant, {"text": "I moved to Berlin.", "subject": "Bea"})
    assert [row[4] for row in facts_of(elephant, tenant)] == ["active", "active"]


# ------------------------------------------------------------------ the owner endpoints


def test_owner_endpoints(client: Client_, elephant: Elephant) -> None:
    headers = {"X-Elephant-Tenant": "owner-api"}
    assert client.get("/tenant/owner", headers=headers).json() == {
        "owner": "user",
        "source": "settings",
    }
    put = client.put("/tenant/owner", json={"owner": "  Cleo  "}, headers=headers)
    assert put.status_code == 200 and put.json() == {"owner": "Cleo", "source": "tenant"}
    assert client.get("/tenant/owner", headers=headers).json()["owner"] == "Cleo"
    assert client.get("/tenant/owner", headers={"X-Elephant-Tenant": "owner-other"}).json() == {
        "owner": "user",
        "source": "settings",
    }
    for bad in ({"owner": ""}, {"owner": "x" * 201}, {}, {"owner": "A", "extra": 1}):
        assert client.put("/tenant/owner", json=bad, headers=headers).status_code == 422, bad
    cleared = client.put("/tenant/owner", json={"owner": None}, headers=headers)
    assert cleared.json() == {"owner": "user", "source": "settings"}


def test_setting_the_owner_needs_admin(settings: Settings, elephant: Elephant) -> None:
    request = KeyIn(tenant="owner-scope", scopes=["read", "write"], name="rw")
    key = create_key(elephant.db, request).key
    with api_client(settings, elephant, key=key) as client:
        assert client.get("/tenant/owner").status_code == 200
        assert client.put("/tenant/owner", json={"owner": "Dan"}).status_code == 403


# ------------------------------------------------------------------ dates anchored to the note


def test_relative_dates_resolve_against_occurred_at(client: Client_, elephant: Elephant) -> None:
    commit(
        client,
        "dates-occurred",
        {"text": "I went to the dentist yesterday.", "subject": "Ana", "occurred_at": "2023-05-08"},
    )
    [fact] = facts_of(elephant, "dates-occurred")
    assert fact[:3] == ("Ana went to the dentist on 7 May 2023", "Ana", date(2023, 5, 7))


def test_a_late_job_anchors_to_the_commit_time(client: Client_, elephant: Elephant) -> None:
    tenant = "dates-late"
    body = commit(
        client, tenant, {"text": "I sold my old bike yesterday.", "subject": "Ana"}, False
    )
    with elephant.db.tenant(tenant) as conn:  # committed in 2021, extracted only now
        conn.execute(
            "UPDATE memories SET created_at = '2021-03-10T09:00:00Z' WHERE id = %s",
            (body["memory_id"],),
        )
    drain(elephant)
    [fact] = facts_of(elephant, tenant)
    assert fact[:3] == ("Ana sold Ana's old bike on 9 March 2021", "Ana", date(2021, 3, 9))


def test_a_conversation_without_dates_anchors_to_its_commit_time(
    client: Client_, elephant: Elephant
) -> None:
    tenant = "dates-conv"
    response = client.post(
        "/commit_conversation",
        json={
            "turns": [
                {"speaker": "Lena", "text": "I adopted a cat named Miso yesterday."},
                {"speaker": "Tom", "text": "Congrats!", "id": "t2"},
            ]
        },
        headers={"X-Elephant-Tenant": tenant},
    )
    assert response.status_code == 201, response.text
    with elephant.db.tenant(tenant) as conn:
        conn.execute("UPDATE turns SET created_at = '2022-07-04T18:00:00Z'")
    drain(elephant)
    with elephant.db.tenant(tenant) as conn:
        row = conn.execute(
            "SELECT text, valid_from::date, source_turn_ids, memory_id IS NOT NULL FROM facts"
        ).fetchone()
    # no turn id given: none stored (not "#0"), but the fact still points at its window
    assert row == ("Lena adopted a cat named Miso on 3 July 2022", date(2022, 7, 3), [], True)


def test_dates_past_the_calendar_give_no_date_and_the_job_completes(
    client: Client_, elephant: Elephant
) -> None:
    tenant = "dates-edge"
    body = commit(
        client,
        tenant,
        {
            "text": "I will retire to Portugal tomorrow.",
            "subject": "Ana",
            "occurred_at": "9999-12-30T12:00:00Z",
        },
    )
    assert body["job_status"] == "done", body
    [fact] = facts_of(elephant, tenant)
    assert fact[:4] == ("Ana will retire to Portugal tomorrow", "Ana", None, None)


# ------------------------------------------------------------------ MCP and the LLM path


def test_the_mcp_store_tool_takes_a_subject(settings: Settings, elephant: Elephant) -> None:
    server = build_server(settings, lambda: elephant)

    async def store() -> Any:
        async with Client(server) as mcp:
            result = await mcp.call_tool("store", {"text": "I work at Siemens.", "subject": "Eli"})
            return result.structured_content

    stored = asyncio.run(store())
    assert stored["status"] == "stored"
    drain(elephant)
    tenant = settings.tenant.default
    with elephant.db.tenant(tenant) as conn:
        payload = conn.execute(
            "SELECT payload FROM jobs WHERE payload ->> 'memory_id' = %s",
            (stored["memory_id"],),
        ).fetchone()
    assert payload is not None and payload[0]["subject"] == "Eli"
    assert ("Eli works at Siemens", "Eli") in [f[:2] for f in facts_of(elephant, tenant)]


def test_the_llm_sees_the_author_and_its_handles_are_not_stored(
    client: Client_, elephant: Elephant
) -> None:
    tenant = "subj-llm"
    answer = {
        "facts": [
            {
                "text": "Ana lives in Lyon",
                "subject": "Ana",
                "valid_from": "2023-05-08",
                "source_turn_ids": ["#0", "D9:9"],
            }
        ]
    }
    llm = ScriptedLLM({"FactsResponse": [answer]})
    with_llm = Elephant(
        settings=elephant.settings, db=elephant.db, embedder=elephant.embedder, llm=llm
    )
    note = NoteIn(text="I live in Lyon.", subject="Ana", force=True)
    result = commit_note(with_llm, tenant, note, wait=True)
    assert result.job_status == "done"
    prompt = next(call[2] for call in llm.calls if call[0] == "FactsResponse")
    assert "[#0] [" in prompt and "note by Ana: " in prompt
    assert facts_of(elephant, tenant) == [
        ("Ana lives in Lyon", "Ana", date(2023, 5, 8), None, "active", [])
    ]


def test_the_prompt_names_a_notes_author() -> None:
    when = datetime(2023, 5, 8, tzinfo=UTC)
    prompt = extract_facts.build_prompt(
        [TurnInput(None, "I live in Lyon.", when, author="Ana"), TurnInput(None, "x", when)], when
    )
    assert '[#0] [2023-05-08T00:00:00+00:00] note by Ana: "I live in Lyon."' in prompt
    assert '[#1] [2023-05-08T00:00:00+00:00] note: "x"' in prompt
    assert "note by NAME" in extract_facts.SYSTEM


def test_an_undated_newer_fact_closes_the_older_at_its_commit_time(elephant: Elephant) -> None:
    tenant = "subj-llm-contra"
    facts = [
        {"facts": [{"text": "Ana lives in Lyon", "subject": "Ana"}]},
        {"facts": [{"text": "Ana lives in Porto", "subject": "Ana"}]},
    ]
    verdict = {"contradicts": True, "confidence": 0.9, "reason": "different residence"}
    llm = ScriptedLLM({"FactsResponse": list(facts), "ContradictionAnswer": [verdict]})
    with_llm = Elephant(
        settings=elephant.settings, db=elephant.db, embedder=elephant.embedder, llm=llm
    )
    commit_note(
        with_llm, tenant, NoteIn(text="I live in Lyon.", subject="Ana", force=True), wait=True
    )
    second = commit_note(
        with_llm, tenant, NoteIn(text="I live in Porto.", subject="Ana", force=True)
    )
    with elephant.db.tenant(tenant) as conn:  # committed in 2022, extracted only now
        conn.execute(
            "UPDATE memories SET created_at = '2022-01-01T00:00:00Z' WHERE id = %s",
            (second.memory_id,),
        )
    drain(with_llm)
    rows = {row[0]: row for row in facts_of(elephant, tenant)}
    assert rows["Ana lives in Lyon"][3:5] == (date(2022, 1, 1), "superseded")
    assert rows["Ana lives in Porto"][2:5] == (None, None, "active")
