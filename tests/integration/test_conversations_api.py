"""GET /conversations, /conversations/{id} and /handoffs: the lossless transcript with its
windows and their gate decisions, over a real database (app.services.memory.transcripts)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from app.api import create_app
from app.config import Settings
from app.services.access.keys import KeyIn, create_key
from app.services.memory.commit import commit_conversation
from app.services.memory.schemas import ConversationIn, TurnIn
from app.services.memory.sessions import SessionCloseIn, close_session
from app.services.memory.transcripts import get_transcript, list_conversations, turn_links
from app.services.runtime import Elephant
from tests.conftest import serve_in_thread

TENANT = "convapi"
TALK = [
    ("Caroline", "I went to the LGBTQ support group yesterday and it was powerful."),
    ("Melanie", "That sounds wonderful. What did you learn there?"),
    ("Caroline", "The adoption agency in Graz accepts single parents, so I applied."),
    ("Melanie", "Congratulations on applying to the adoption agency!"),
    ("Caroline", "Thanks. I also started painting sunsets on weekends."),
    ("Melanie", "I ran a charity race for mental health last Saturday."),
    ("Caroline", "My grandmother gave me a necklace from Sweden."),
]


def talk(conversation_id: str, **extra: Any) -> ConversationIn:
    return ConversationIn(
        turns=[
            TurnIn(speaker=who, text=text, id=f"D1:{n + 1}") for n, (who, text) in enumerate(TALK)
        ],
        conversation_id=conversation_id,
        session_date=datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
        window_size=3,
        stride=2,
        **extra,
    )


@pytest.fixture(scope="module")
def seeded(elephant: Elephant) -> dict[str, Any]:
    first = commit_conversation(elephant, TENANT, talk("chat-1"), wait=True)
    again = commit_conversation(elephant, TENANT, talk("chat-2"))  # every window a duplicate
    extra = commit_conversation(
        elephant,
        TENANT,
        ConversationIn(
            turns=[TurnIn(speaker="Caroline", text="See you at the pottery class on Friday.")],
            conversation_id="chat-1",  # appended: seq continues
            window_size=3,
            stride=2,
        ),
    )
    chatter = commit_conversation(
        elephant,
        TENANT,
        ConversationIn(
            turns=[TurnIn(speaker=w, text=t) for w, t in (("a", "ok"), ("b", "yes"), ("a", "ok"))],
            conversation_id="chatter",
        ),
    )
    closed = close_session(
        elephant,
        TENANT,
        SessionCloseIn(
            project="elephant-console",
            transcript="user: We decided to use SVG for charts.\n"
            "assistant: Next we need to write the browser tests.",
        ),
        wait=False,
    )
    return {"first": first, "again": again, "extra": extra, "closed": closed, "chatter": chatter}


@pytest.fixture(scope="module")
def client(settings: Settings, elephant: Elephant) -> Iterator[httpx.Client]:
    key = create_key(elephant.db, KeyIn(tenant=TENANT, scopes=["read"], name="conv")).key
    with (
        serve_in_thread(create_app(settings, elephant)) as url,
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http,
    ):
        yield http


def test_a_transcript_has_every_turn_and_every_window_with_its_decision(
    elephant: Elephant, seeded: dict[str, Any]
) -> None:
    first = seeded["first"]
    transcript = get_transcript(elephant, TENANT, "chat-1")
    assert transcript.conversation.id == first.conversation_id
    assert [t.seq for t in transcript.turns] == list(range(len(TALK) + 1))
    assert transcript.turns[2].text == TALK[2][1]
    assert transcript.turns[2].turn_id == "D1:3"
    # the windows the commit reported, with their ranges and statuses, and the appended one
    reported = [(w.turn_start, w.turn_end, w.status, w.memory_id) for w in first.windows]
    reported += [(w.turn_start, w.turn_end, w.status, w.memory_id) for w in seeded["extra"].windows]
    shown = [(w.turn_start, w.turn_end, w.status, w.memory_id) for w in transcript.windows]
    assert shown == reported
    assert all(w.decision is not None and w.reason for w in transcript.windows)

    duplicate = get_transcript(elephant, TENANT, seeded["again"].conversation_id)
    assert {w.status for w in duplicate.windows} == {"duplicate"}
    stored = {w.memory_id for w in transcript.windows if w.status == "stored"}
    assert {w.memory_id for w in duplicate.windows} <= stored

    chatter = get_transcript(elephant, TENANT, "chatter")
    assert [(w.status, w.memory_id) for w in chatter.windows] == [("rejected", None)]
    assert chatter.windows[0].decision == "rejected" and chatter.windows[0].composite is not None


def test_the_list_pages_newest_first_by_cursor(elephant: Elephant, seeded: dict[str, Any]) -> None:
    page = list_conversations(elephant, TENANT, limit=2)
    assert page.total == 4
    assert len(page.items) == 2 and page.next_cursor is not None
    rest = list_conversations(elephant, TENANT, limit=2, cursor=page.next_cursor)
    assert rest.next_cursor is None
    ids = [item.id for item in page.items + rest.items]
    assert len(set(ids)) == 4
    newest = page.items[0]
    assert newest.project == "elephant-console"  # the closed session
    chat = next(item for item in page.items + rest.items if item.external_id == "chat-1")
    assert chat.turns == len(TALK) + 1
    assert chat.speakers == ["Caroline", "Melanie"]


def test_the_api_serves_the_list_a_transcript_and_handoffs(
    client: httpx.Client, seeded: dict[str, Any]
) -> None:
    listing = client.get("/conversations", params={"limit": 1})
    assert listing.status_code == 200, listing.text
    body = listing.json()
    assert body["total"] == 4 and len(body["items"]) == 1 and body["next_cursor"]
    assert body["items"][0]["created_at"].endswith("Z")
    after = client.get("/conversations", params={"limit": 1, "cursor": body["next_cursor"]})
    assert after.json()["items"][0]["id"] != body["items"][0]["id"]

    one = client.get("/conversations/chat-1")
    assert one.status_code == 200, one.text
    data = one.json()
    assert len(data["turns"]) == len(TALK) + 1
    assert data["windows"][0]["turn_start"] == 0
    assert data["windows"][0]["status"] in {"stored", "rejected"}
    same = client.get(f"/conversations/{data['conversation']['id']}").json()
    assert same["conversation"] == data["conversation"]

    handoffs = client.get("/handoffs").json()
    assert handoffs["items"][0]["project"] == "elephant-console"
    assert handoffs["items"][0]["conversation_id"] == seeded["closed"].conversation_id
    session = client.get(f"/conversations/{seeded['closed'].conversation_id}").json()
    assert session["handoffs"][0]["summary"] == handoffs["items"][0]["summary"]


def test_bad_requests_are_422_and_unknown_ones_404(
    client: httpx.Client, seeded: dict[str, Any]
) -> None:
    missing = client.get("/conversations/no-such-chat")
    assert missing.status_code == 404
    assert missing.json()["error"] == "not_found"
    bad_cursor = client.get("/conversations", params={"cursor": "nonsense"})
    assert bad_cursor.status_code == 422
    assert bad_cursor.json()["details"]["fields"][0]["key"] == "cursor"
    assert client.get("/conversations", params={"limit": 0}).status_code in (400, 422)
    assert client.get("/handoffs", params={"cursor": "x"}).status_code == 422


def test_another_tenant_sees_nothing_and_a_key_without_read_is_refused(
    client: httpx.Client, elephant: Elephant, seeded: dict[str, Any]
) -> None:
    other = create_key(elephant.db, KeyIn(tenant="convother", scopes=["read"], name="o")).key
    headers = {"Authorization": f"Bearer {other}"}
    assert client.get("/conversations", headers=headers).json()["total"] == 0
    assert client.get("/conversations/chat-1", headers=headers).status_code == 404
    writer = create_key(elephant.db, KeyIn(tenant=TENANT, scopes=["write"], name="w")).key
    refused = client.get("/conversations", headers={"Authorization": f"Bearer {writer}"})
    assert refused.status_code == 403


def test_search_hits_lead_back_to_their_turns(elephant: Elephant, seeded: dict[str, Any]) -> None:
    first = seeded["first"]
    window = first.windows[1]
    with elephant.db.tenant(TENANT) as conn:
        facts = conn.execute(
            "SELECT f.id::text, f.source_turn_ids FROM facts AS f WHERE f.conversation_id = %s",
            (first.conversation_id,),
        ).fetchall()
    assert facts, "the offline extractor made facts of the conversation"
    hits = [(window.memory_id, "window"), *((fact_id, "fact") for fact_id, _ in facts)]
    hits.append(("00000000-0000-4000-8000-000000000000", "note"))
    links = turn_links(elephant, TENANT, hits)
    assert links[window.memory_id].conversation_id == first.conversation_id
    assert (links[window.memory_id].seq_start, links[window.memory_id].seq_end) == (2, 4)
    for fact_id, cited in facts:
        link = links[fact_id]
        if cited:  # the caller's turn ids D1:<seq + 1>
            seqs = [int(turn.split(":")[1]) - 1 for turn in cited]
            assert (link.seq_start, link.seq_end) == (min(seqs), max(seqs))
        assert 0 <= link.seq_start <= link.seq_end < len(TALK)
    assert "00000000-0000-4000-8000-000000000000" not in links


def test_windows_logged_before_their_turns_were_recorded_still_show_when_stored(
    elephant: Elephant,
) -> None:
    """Gate log rows written before migration 0011 name no conversation: the transcript
    falls back to the stored windows (from memories), without their decisions."""
    turns = [
        ("Priya", "The Lisbon office moves to the Alcantara building on 4 March 2024."),
        ("Tomas", "Then the lab equipment from Porto ships on 28 February."),
        ("Priya", "Marta owns the move; her budget is 42,000 euros."),
    ]
    done = commit_conversation(
        elephant,
        TENANT,
        ConversationIn(
            turns=[TurnIn(speaker=who, text=text) for who, text in turns],
            conversation_id="legacy",
            window_size=2,
            stride=1,
        ),
    )
    with elephant.db.admin_connection() as conn:
        conn.execute(
            "UPDATE admission_log SET conversation_id = NULL, turn_start = NULL, "
            "turn_end = NULL WHERE conversation_id = %s",
            (done.conversation_id,),
        )
    transcript = get_transcript(elephant, TENANT, "legacy")
    stored = [(w.turn_start, w.turn_end, w.memory_id) for w in done.windows if w.status == "stored"]
    assert stored, "the seed must store windows"
    assert [(w.turn_start, w.turn_end, w.memory_id) for w in transcript.windows] == stored
    assert all(w.status == "stored" and w.decision is None for w in transcript.windows)
