"""The gate's decisions over the API: the log, paged and filtered, and admitting a rejected
note after all (once), with what erasure does to a kept rejected text.

On this module's real database with the real embedder and the offline gate scorer.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from app.config import Settings
from app.services.access.keys import KeyIn, create_key
from app.services.gate import admit as gate
from app.services.runtime import Elephant
from tests.conftest import api_client

Client = TestClient  # type: ignore[type-arg]
TENANT = "gatelog"
JUNK = "ok thanks"


@pytest.fixture(scope="module")
def client(settings: Settings, elephant: Elephant) -> Iterator[Client]:
    with api_client(settings, elephant) as test_client:
        test_client.headers["X-Elephant-Tenant"] = TENANT
        yield test_client


def keyed(settings: Settings, elephant: Elephant, scopes: list[str]) -> Client:
    key = create_key(elephant.db, KeyIn(tenant=TENANT, scopes=scopes, name="-".join(scopes))).key
    return api_client(settings, elephant, key)


def commit(client: Client, text: str, **extra: Any) -> dict[str, Any]:
    answer = client.post("/commit", json={"text": text, **extra})
    assert answer.status_code in (200, 201), answer.text
    body: dict[str, Any] = answer.json()
    return body


def last_decision(client: Client, **params: Any) -> dict[str, Any]:
    page = client.get("/amac/decisions", params={"limit": 1, **params})
    assert page.status_code == 200, page.text
    item: dict[str, Any] = page.json()["items"][0]
    return item


def test_a_rejected_note_keeps_its_whole_text_and_the_others_only_a_preview(
    client: Client,
) -> None:
    assert commit(client, JUNK, source="chat")["status"] == "rejected"
    rejected = last_decision(client, decision="rejected")
    assert rejected["text_preview"] == JUNK and rejected["rejected_text"] == JUNK
    assert rejected["admittable"] is True and rejected["memory_id"] is None
    assert rejected["source"] == "chat" and rejected["kind"] == "note"
    for score in ("relevance", "novelty", "specificity", "composite", "threshold"):
        assert isinstance(rejected[score], float)
    assert rejected["composite"] < rejected["threshold"] == 4.0
    assert rejected["reason"] and rejected["scorer"] == "offline"

    stored = commit(client, "Priya's flight to Lima leaves on 14 March 2027 from gate B12")
    accepted = last_decision(client)
    assert accepted["decision"] == "accepted" and accepted["memory_id"] == stored["memory_id"]
    assert accepted["rejected_text"] is None and accepted["admittable"] is False


def test_decisions_page_newest_first_by_cursor_and_filter(client: Client) -> None:
    for text in ("lol", "hmm ok", "thanks!"):
        commit(client, text)
    commit(client, "Marta keeps her bike in the courtyard shed, lock code 4471")
    seen: list[int] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 2, "decision": "rejected"}
        if cursor:
            params["cursor"] = cursor
        body = client.get("/amac/decisions", params=params).json()
        assert len(body["items"]) <= 2 and body["limit"] == 2
        assert {item["decision"] for item in body["items"]} <= {"rejected"}
        seen += [item["id"] for item in body["items"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == sorted(seen, reverse=True) and len(seen) == len(set(seen)) >= 3
    assert body["total"] == len(seen)
    everything = client.get("/amac/decisions", params={"limit": 200}).json()
    assert everything["total"] > len(seen)
    assert client.get("/amac/decisions", params={"decision": "maybe"}).status_code == 422
    assert client.get("/amac/decisions", params={"kind": "window"}).json()["items"] == []
    bad = client.get("/amac/decisions", params={"cursor": "nonsense"})
    assert bad.status_code == 422 and bad.json()["details"]["fields"][0]["key"] == "cursor"


def test_admitting_a_rejected_note_stores_it_forced_once(
    client: Client, settings: Settings, elephant: Elephant
) -> None:
    text = "ok thanks, see you"
    commit(client, text, source="slack")
    rejected = last_decision(client, decision="rejected")
    assert rejected["rejected_text"] == text

    with keyed(settings, elephant, ["read"]) as reader:
        refused = reader.post(f"/amac/decisions/{rejected['id']}/admit")
        assert refused.status_code == 403
        assert reader.get("/amac/decisions").status_code == 200

    with keyed(settings, elephant, ["read", "write"]) as writer:
        answer = writer.post(f"/amac/decisions/{rejected['id']}/admit")
        assert answer.status_code == 201, answer.text
        body = answer.json()
        assert body["decision_id"] == rejected["id"] and body["status"] == "stored"
        assert body["gate"]["decision"] == "forced" and body["job_id"] is not None
        memory = client.get(f"/memories/{body['memory_id']}").json()
        assert memory["text"] == text and memory["source"] == "slack" and memory["kind"] == "note"

        forced = last_decision(client, decision="forced")
        assert forced["id"] == body["admission_id"] and forced["memory_id"] == body["memory_id"]
        assert f"admitted from rejected decision {rejected['id']} by key " in forced["reason"]
        again = client.get("/amac/decisions", params={"decision": "rejected", "limit": 200})
        (old,) = [item for item in again.json()["items"] if item["id"] == rejected["id"]]
        assert old["rejected_text"] is None and old["admittable"] is False
        assert old["text_preview"] == text  # the log keeps what the gate saw

        twice = writer.post(f"/amac/decisions/{rejected['id']}/admit")
        assert twice.status_code == 409
        assert "admitted already" in twice.json()["message"]
        assert writer.post("/amac/decisions/987654321/admit").status_code == 404
        not_rejected = writer.post(f"/amac/decisions/{forced['id']}/admit")
        assert not_rejected.status_code == 422
        assert "not rejected" in not_rejected.json()["message"]


def test_a_text_stored_since_is_admitted_as_a_duplicate(client: Client) -> None:
    commit(client, "nice")
    rejected = last_decision(client, decision="rejected")
    stored = commit(client, "nice", force=True)
    assert stored["status"] == "stored"
    answer = client.post(f"/amac/decisions/{rejected['id']}/admit")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "duplicate" and body["memory_id"] == stored["memory_id"]
    assert client.post(f"/amac/decisions/{rejected['id']}/admit").status_code == 409


def test_a_rejected_window_keeps_its_text_but_is_not_admitted_alone(
    client: Client, elephant: Elephant
) -> None:
    tenant = "gatelog-window"
    headers = {"X-Elephant-Tenant": tenant}
    gate.set_threshold(elephant, tenant, 10.0)  # everything is rejected
    turns = [{"speaker": "Ann", "text": "ok"}, {"speaker": "Ben", "text": "thanks"}]
    body = {"turns": turns, "window_size": 2}
    result = client.post("/commit_conversation", json=body, headers=headers)
    assert result.json()["windows"]["rejected"] == 1, result.text
    page = client.get("/amac/decisions", params={"kind": "window"}, headers=headers).json()
    (window,) = page["items"]
    assert window["decision"] == "rejected" and window["admittable"] is False
    assert window["rejected_text"] and "Ann" in window["rejected_text"]
    conversation = result.json()["conversation_id"]
    assert (window["conversation_id"], window["turn_start"], window["turn_end"]) == (
        conversation,
        0,
        len(turns) - 1,
    ), "the log names the window's conversation and turns"
    refused = client.post(f"/amac/decisions/{window['id']}/admit", headers=headers)
    assert refused.status_code == 422 and "window" in refused.json()["message"]


def test_subject_erasure_removes_a_rejected_text_naming_them_beyond_the_preview(
    client: Client, elephant: Elephant
) -> None:
    tenant = "gatelog-erase"
    headers = {"X-Elephant-Tenant": tenant}
    gate.set_threshold(elephant, tenant, 10.0)  # everything is rejected
    text = "filler words " * 30 + "and Zbigniew Quorn keeps the spare key"
    body = client.post("/commit", json={"text": text}, headers=headers).json()
    assert body["status"] == "rejected"
    with elephant.db.tenant(tenant) as conn:
        row = conn.execute("SELECT text_preview, rejected_text FROM admission_log").fetchone()
    assert row is not None and "Zbigniew" not in row[0] and "Zbigniew" in row[1]
    erased = client.post("/erase", json={"subject": "Zbigniew Quorn"}, headers=headers)
    assert erased.status_code == 200, erased.text
    assert erased.json()["removed"]["admission_log"] == 1
    with elephant.db.tenant(tenant) as conn:
        assert conn.execute("SELECT count(*) FROM admission_log").fetchone() == (0,)
