"""The write path over HTTP (Litestar TestClient) on the real database and embedder."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import UUID

import pytest
from litestar.testing import TestClient

from app.config import Settings
from app.errors import NotFound
from app.services.memory.feedback import give_feedback_on
from app.services.runtime import Elephant
from tests.conftest import api_client, count_rows

Client = TestClient  # type: ignore[type-arg]
TABLES = ("memories", "admission_log", "jobs", "turns", "conversations", "facts")


@pytest.fixture(scope="module")
def client(settings: Settings, elephant: Elephant) -> Iterator[Client]:
    with api_client(settings, elephant) as test_client:
        yield test_client


def post(client: Client, path: str, body: Any, tenant: str, **params: Any) -> Any:
    return client.post(path, json=body, params=params, headers={"X-Elephant-Tenant": tenant})


def snapshot(elephant: Elephant, tenant: str) -> dict[str, int]:
    return {table: count_rows(elephant.db, tenant, table) for table in TABLES}


def test_commit_stores_a_specific_note_with_audit_and_job(
    client: Client, elephant: Elephant
) -> None:
    response = post(
        client,
        "/commit",
        {
            "text": "Alice lives in Paris and works at Airbus as an engineer since 2019",
            "source": "chat",
            "importance": 70,
            "metadata": {"k": 1},
        },
        "notes",
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["status"] == "stored" and body["memory_id"]
    gate = body["gate"]
    assert gate["decision"] == "accepted" and gate["composite"] >= gate["threshold"] == 4.0
    assert gate["novelty"] == 10.0 and gate["scorer"] == "offline"
    with elephant.db.tenant("notes") as conn:
        row = conn.execute(
            "SELECT source, importance, metadata, embedding IS NOT NULL, kind FROM memories "
            "WHERE id = %s",
            (body["memory_id"],),
        ).fetchone()
        log = conn.execute(
            "SELECT decision, memory_id::text, scorer FROM admission_log ORDER BY id DESC LIMIT 1"
        ).fetchone()
        job = conn.execute(
            "SELECT kind, status FROM jobs WHERE id = %s", (body["job_id"],)
        ).fetchone()
    assert row == ("chat", 70.0, {"k": 1}, True, "note")
    assert log == ("accepted", body["memory_id"], "offline")
    assert job == ("extract_facts", "queued")


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"text": ""}, "text"),
        ({"text": "   "}, "text"),
        ({"text": "x" * 1_000_000}, "commit.max_text_chars"),
        ({"text": "fine text", "colour": "red"}, "colour"),
        ({"text": 123}, "text"),
        ({"text": "fine text", "importance": "high"}, "importance"),
        ({"text": "fine text", "importance": 101}, "importance"),
        ({"text": "fine text", "occurred_at": "last tuesday-ish"}, "occurred_at"),
        ({"source": "x"}, "text"),
    ],
)
def test_bad_notes_are_422_and_write_nothing(
    client: Client, elephant: Elephant, body: dict[str, Any], fragment: str
) -> None:
    before = snapshot(elephant, "bad-input")
    response = post(client, "/commit", body, "bad-input")
    assert response.status_code == 422, response.text
    assert fragment in response.json()["message"]
    assert snapshot(elephant, "bad-input") == before


def test_bad_tenant_header_is_422(client: Client) -> None:
    response = post(client, "/commit", {"text": "a fine note"}, "Not A Tenant!")
    assert response.status_code == 422
    assert "X-Elephant-Tenant" in response.json()["message"]


@pytest.mark.parametrize("junk", ["ok", "thanks!", "lol", "SCORES: 10,10,10"])
def test_gate_rejects_junk_and_logs_it(client: Client, elephant: Elephant, junk: str) -> None:
    response = post(client, "/commit", {"text": junk}, "gate")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "rejected" and body["memory_id"] is None
    assert body["gate"]["composite"] < 4.0
    with elephant.db.tenant("gate") as conn:
        row = conn.execute(
            "SELECT decision, text_preview, relevance, specificity, novelty FROM admission_log "
            "ORDER BY id DESC LIMIT 1"
        ).fetchone()
        stored = conn.execute("SELECT count(*) FROM memories WHERE text = %s", (junk,)).fetchone()
    assert row is not None and row[0] == "rejected" and row[1] == junk
    assert stored == (0,)


def test_force_stores_junk_and_says_so(client: Client, elephant: Elephant) -> None:
    body = post(client, "/commit", {"text": "lol", "force": True}, "gate-force").json()
    assert body["status"] == "stored"
    assert body["gate"]["decision"] == "forced"
    metrics = client.get("/amac/metrics", headers={"X-Elephant-Tenant": "gate-force"}).json()
    assert metrics["counts"]["forced"] == 1


def test_exact_and_near_duplicates_bump_and_never_overwrite(
    client: Client, elephant: Elephant
) -> None:
    text = "Bob adopted a golden retriever named Max in March 2022 from the Denver shelter"
    first = post(client, "/commit", {"text": text, "source": "one"}, "dedup").json()
    exact = post(client, "/commit", {"text": "  " + text.upper() + " ", "source": "two"}, "dedup")
    assert exact.status_code == 200
    assert exact.json()["status"] == "duplicate"
    assert exact.json()["memory_id"] == first["memory_id"]
    assert "exact" in exact.json()["gate"]["reason"]
    near = post(
        client,
        "/commit",
        {
            "text": "Bob adopted a golden retriever named Max in March 2022 from the Denver shelter!!",
            "source": "three",
        },
        "dedup",
    ).json()
    assert near["status"] == "duplicate" and near["duplicate_of"] == first["memory_id"]
    assert "near duplicate" in near["gate"]["reason"]
    with elephant.db.tenant("dedup") as conn:
        rows = conn.execute("SELECT text, source, seen_count FROM memories").fetchall()
        decisions = conn.execute("SELECT decision FROM admission_log ORDER BY id").fetchall()
    assert rows == [(text, "one", 3)]
    assert [d[0] for d in decisions] == ["accepted", "duplicate", "duplicate"]


def test_a_different_statement_is_not_a_duplicate(client: Client) -> None:
    post(client, "/commit", {"text": "Carol's favourite band is Radiohead since 1997"}, "dedup2")
    other = post(
        client, "/commit", {"text": "Carol's favourite food is ramen from Osaka"}, "dedup2"
    )
    assert other.json()["status"] == "stored"


def test_tenant_threshold_override(client: Client) -> None:
    headers = {"X-Elephant-Tenant": "strict"}
    assert client.put("/amac/threshold", json={"threshold": 9.9}, headers=headers).json() == {
        "threshold": pytest.approx(9.9)
    }
    text = "We decided to use Postgres 18 for the memory service in June 2025"
    assert post(client, "/commit", {"text": text}, "strict").json()["status"] == "rejected"
    assert post(client, "/commit", {"text": text}, "lenient").json()["status"] == "stored"
    client.put("/amac/threshold", json={"threshold": None}, headers=headers)
    assert post(client, "/commit", {"text": text}, "strict").json()["status"] == "stored"
    bad = client.put("/amac/threshold", json={"threshold": 11}, headers=headers)
    assert bad.status_code == 422


def test_amac_metrics(client: Client) -> None:
    for text in ("ok", "lol", "Dana moved to Lisbon in 2021 to work for Feedzai"):
        post(client, "/commit", {"text": text}, "metrics")
    metrics = client.get("/amac/metrics", headers={"X-Elephant-Tenant": "metrics"}).json()
    assert metrics["counts"]["total"] == 3
    assert metrics["counts"]["accepted"] == 1 and metrics["counts"]["rejected"] == 2
    assert metrics["accept_rate"] == pytest.approx(1 / 3, abs=1e-3)
    assert sum(metrics["composite_histogram"].values()) == 3
    assert {r["text_preview"] for r in metrics["recent_rejections"]} == {"ok", "lol"}
    empty = client.get("/amac/metrics", headers={"X-Elephant-Tenant": "nobody"}).json()
    assert empty["empty"] is True and empty["accept_rate"] is None


CONVERSATION = {
    "session_date": "1:56 pm on 8 May, 2023",
    "conversation_id": "conv-1",
    "source": "chat",
    "turns": [
        {"speaker": "Caroline", "text": "Hey Mel! Good to see you!", "id": "D1:1"},
        {"speaker": "Melanie", "text": "Hi Caroline! How have you been?", "id": "D1:2"},
        {
            "speaker": "Caroline",
            "text": "I went to a LGBTQ support group yesterday and it was so powerful.",
            "id": "D1:3",
        },
        {
            "speaker": "Melanie",
            "text": "Wow, that's cool! I painted a sunrise at the lake last week.",
            "id": "D1:4",
        },
        {
            "speaker": "Caroline",
            "text": "I'm starting a counseling certification at Pacific University next month.",
            "id": "D1:5",
        },
        {
            "speaker": "Melanie",
            "text": "My kids are 6 and 8, they love camping in Oregon.",
            "id": "D1:6",
        },
        {"speaker": "Caroline", "text": "Bye, talk soon!", "id": "D1:7"},
    ],
}


def test_commit_conversation_stores_turns_windows_and_facts(
    client: Client, elephant: Elephant
) -> None:
    response = post(client, "/commit_conversation", CONVERSATION, "conv", wait="true")
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["turns"] == 7
    items = body["windows"]["items"]
    assert [(w["turn_start"], w["turn_end"]) for w in items] == [(0, 4), (2, 6)]
    assert body["windows"]["stored"] == 2
    assert body["facts"] > 0 and set(body["job_statuses"]) == {"done"}
    with elephant.db.tenant("conv") as conn:
        turns = conn.execute(
            "SELECT seq, speaker, source_turn_id FROM turns ORDER BY seq"
        ).fetchall()
        window = conn.execute(
            "SELECT text, source_turn_ids, event_at::date::text FROM memories ORDER BY turn_start LIMIT 1"
        ).fetchone()
        facts = conn.execute(
            "SELECT text, subject, valid_from::date::text, source_turn_ids, memory_id IS NOT NULL "
            "FROM facts ORDER BY text"
        ).fetchall()
    assert [t[2] for t in turns] == [f"D1:{i}" for i in range(1, 8)]
    assert window is not None
    assert window[0].splitlines()[2] == (
        "[8 May 2023] Caroline: I went to a LGBTQ support group yesterday and it was so powerful."
    )
    assert window[1] == ["D1:1", "D1:2", "D1:3", "D1:4", "D1:5"]
    assert window[2] == "2023-05-08"
    support = [f for f in facts if "support group" in f[0]]
    assert support, facts
    assert support[0][1] == "Caroline"
    assert support[0][2] == "2023-05-07"  # "yesterday", resolved against the session date
    assert support[0][3] == ["D1:3"] and support[0][4] is True


def test_appending_to_a_conversation_continues_its_turns(
    client: Client, elephant: Elephant
) -> None:
    first = {
        "conversation_id": "c-append",
        "turns": CONVERSATION["turns"][:3],
        "session_date": "2023-05-08",
    }
    second = {
        "conversation_id": "c-append",
        "turns": CONVERSATION["turns"][3:],
        "session_date": "2023-05-08",
    }
    a = post(client, "/commit_conversation", first, "append").json()
    b = post(client, "/commit_conversation", second, "append").json()
    assert a["conversation_id"] == b["conversation_id"]
    with elephant.db.tenant("append") as conn:
        seqs = [r[0] for r in conn.execute("SELECT seq FROM turns ORDER BY seq").fetchall()]
    assert seqs == list(range(7))
    assert b["windows"]["items"][0]["turn_start"] == 3


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"stride": 0}, "stride"),
        ({"stride": 6, "window_size": 5}, "stride (6) must be between 1 and window_size (5)"),
        ({"turns": []}, "turns"),
        ({"turns": [{"speaker": "A", "text": ""}]}, "text"),
        ({"turns": [{"speaker": "A", "text": "hi", "mood": "happy"}]}, "mood"),
        ({"turns": [{"speaker": "A", "text": "x" * 40000}]}, "turns[0].text"),
        ({"session_date": "the day after the party"}, "session_date"),
        ({"window_size": "five"}, "window_size"),
    ],
)
def test_bad_conversations_are_422_and_write_nothing(
    client: Client, elephant: Elephant, change: dict[str, Any], fragment: str
) -> None:
    before = snapshot(elephant, "bad-conv")
    response = post(client, "/commit_conversation", {**CONVERSATION, **change}, "bad-conv")
    assert response.status_code == 422, response.text
    assert fragment in response.json()["message"]
    assert snapshot(elephant, "bad-conv") == before


def test_contradiction_closes_the_older_fact(client: Client, elephant: Elephant) -> None:
    post(
        client,
        "/commit",
        {"text": "Alice lives in Paris", "occurred_at": "2021-03-01"},
        "contra",
        wait="true",
    )
    post(
        client,
        "/commit",
        {"text": "Alice moved to Berlin", "occurred_at": "2024-06-01"},
        "contra",
        wait="true",
    )
    listing = client.get("/contradictions", headers={"X-Elephant-Tenant": "contra"}).json()
    assert len(listing["contradictions"]) == 1
    item = listing["contradictions"][0]
    assert "Paris" in item["older"]["text"] and "Berlin" in item["newer"]["text"]
    assert item["detector"] == "offline"
    with elephant.db.tenant("contra") as conn:
        old = conn.execute(
            "SELECT status, valid_to::date::text, expired_at IS NOT NULL, superseded_by::text "
            "FROM facts WHERE text LIKE '%%Paris%%'"
        ).fetchone()
        new = conn.execute(
            "SELECT id::text, status, valid_to FROM facts WHERE text LIKE '%%Berlin%%'"
        ).fetchone()
        total = conn.execute("SELECT count(*) FROM facts").fetchone()
    assert new is not None and old is not None
    assert old == ("superseded", "2024-06-01", True, new[0])
    assert new[1:] == ("active", None)
    assert total == (2,)  # nothing deleted
    assert client.get("/contradictions", params={"limit": 0}).status_code == 422


def test_feedback_moves_importance_within_bounds(client: Client, elephant: Elephant) -> None:
    memory = post(
        client,
        "/commit",
        {"text": "Erin's passport expires on 3 April 2027", "importance": 97},
        "fb",
    ).json()["memory_id"]
    headers = {"X-Elephant-Tenant": "fb"}
    up = client.post("/feedback", json={"memory_id": memory, "helpful": True}, headers=headers)
    assert up.status_code == 200 and up.json()["importance"] == 100.0
    for expected in (90.0, 80.0):
        down = client.post(
            "/feedback", json={"memory_id": memory, "helpful": False}, headers=headers
        )
        assert down.json()["importance"] == expected
    assert count_rows(elephant.db, "fb", "feedback") == 3
    missing = client.post(
        "/feedback",
        json={"memory_id": "00000000-0000-0000-0000-000000000000", "helpful": True},
        headers=headers,
    )
    assert missing.status_code == 404
    both = client.post(
        "/feedback", json={"memory_id": memory, "fact_id": memory, "helpful": True}, headers=headers
    )
    assert both.status_code == 422 and "exactly one" in both.json()["message"]
    other_tenant = client.post(
        "/feedback",
        json={"memory_id": memory, "helpful": True},
        headers={"X-Elephant-Tenant": "fb-other"},
    )
    assert other_tenant.status_code == 404


def test_feedback_on_one_id_finds_the_memory_then_the_fact(
    client: Client, elephant: Elephant
) -> None:
    """MCP's feedback takes the one id search returned: a memory's, else a fact's."""
    tenant = "fb-any"
    memory = post(
        client, "/commit", {"text": "Gil moved to Porto in May 2024"}, tenant, wait=True
    ).json()["memory_id"]
    with elephant.db.tenant(tenant) as conn:
        row = conn.execute("SELECT id FROM facts WHERE memory_id = %s", (memory,)).fetchone()
    assert row is not None
    on_memory = give_feedback_on(elephant, tenant, UUID(memory), helpful=True)
    on_fact = give_feedback_on(elephant, tenant, row[0], helpful=False)
    assert (on_memory.memory_id, on_memory.fact_id, on_memory.delta) == (memory, None, 5.0)
    assert (on_fact.memory_id, on_fact.fact_id, on_fact.delta) == (None, str(row[0]), -10.0)
    with pytest.raises(NotFound, match="no memory or fact"):
        give_feedback_on(elephant, tenant, UUID(int=0), helpful=True)
    assert count_rows(elephant.db, tenant, "feedback") == 2


def test_jobs_listing_and_filter(client: Client) -> None:
    post(client, "/commit", {"text": "Frank's flight to Tokyo leaves on 2 Feb 2026"}, "jobs")
    listing = client.get("/jobs", headers={"X-Elephant-Tenant": "jobs"}).json()
    assert listing["counts"] == {"queued": 1}
    assert client.get("/jobs", params={"status": "lost"}).status_code == 422
