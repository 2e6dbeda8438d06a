"""Session lifecycle: transcript splitting, the offline handoff, close → handoff over REST,
the LLM handoff (scripted) and the LLM-down fallback, on the real database and embedder."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from litestar.testing import TestClient

from app.config import Settings
from app.providers.llm import LLMError
from app.services.memory.sessions import (
    SessionCloseIn,
    classify,
    close_session,
    get_handoff,
    offline_handoff,
    split_transcript,
)
from app.services.runtime import Elephant
from tests.conftest import api_client, count_rows
from tests.fakes import ScriptedLLM

Client = TestClient  # type: ignore[type-arg]

TRANSCRIPT = """\
Alice: We decided to use Postgres 18 with pgvector for the memory store.
Bob: Should we keep Redis as a cache in front of search?
It would add a moving part.
Alice: TODO: write the migration for the handoffs table.
Note: the staging database is still on version 16
Bob: Next I will benchmark hybrid search at 100k rows.
Alice: Open question: how long do we keep raw transcripts
"""


@pytest.fixture(scope="module")
def client(settings: Settings, elephant: Elephant) -> Iterator[Client]:
    with api_client(settings, elephant) as test_client:
        yield test_client


def with_llm(elephant: Elephant, llm: ScriptedLLM) -> Elephant:
    return Elephant(settings=elephant.settings, db=elephant.db, embedder=elephant.embedder, llm=llm)


# ------------------------------------------------------------------ pure parts


def test_transcript_lines_become_turns_and_labels_stay_text() -> None:
    turns = split_transcript(TRANSCRIPT, 32000)
    assert [turn.speaker for turn in turns] == ["Alice", "Bob", "Alice", "Bob", "Alice"]
    assert turns[1].text == (
        "Should we keep Redis as a cache in front of search?\nIt would add a moving part."
    )
    assert turns[2].text.endswith("Note: the staging database is still on version 16")
    assert turns[4].text == "Open question: how long do we keep raw transcripts"


def test_plain_text_is_one_turn_and_a_long_one_is_split_at_paragraphs() -> None:
    [single] = split_transcript("We shipped the importer. https://example.com: docs", 1000)
    assert single.speaker == "user"
    assert single.text == "We shipped the importer. https://example.com: docs"
    long_text = "a" * 250 + "\n\n" + "b" * 50 + "\n\n" + "c" * 30
    pieces = split_transcript(long_text, 100)
    assert [len(piece.text) for piece in pieces] == [100, 100, 50, 82]
    assert "".join(piece.text for piece in pieces).replace("\n", "") == long_text.replace("\n", "")


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("We decided to use Litestar for the API.", "decision"),
        ("We chose HNSW over IVFFlat.", "decision"),
        ("Should we go with Redis?", "question"),
        ("Open question: retention of transcripts", "question"),
        ("The embedding dimension is TBD.", "question"),
        ("TODO: add the reranker to compose", "next_step"),
        ("Next we need to benchmark ingest.", "next_step"),
        ("The tests pass on the laptop.", None),
    ],
)
def test_offline_rules(sentence: str, kind: str | None) -> None:
    assert classify(sentence) == kind


def test_offline_handoff_buckets_and_summary() -> None:
    turns = split_transcript(TRANSCRIPT, 32000)
    draft = offline_handoff("elephant", turns, datetime(2025, 6, 1, tzinfo=UTC))
    assert draft.decisions == ["We decided to use Postgres 18 with pgvector for the memory store."]
    assert draft.open_questions == [
        "Should we keep Redis as a cache in front of search?",
        "Open question: how long do we keep raw transcripts",
    ]
    assert draft.next_steps == [
        "TODO: write the migration for the handoffs table.",
        "Next I will benchmark hybrid search at 100k rows.",
    ]
    assert draft.summary.startswith("Session on elephant (2025-06-01): 5 turns by Alice, Bob.")
    assert "Decisions: 1, open questions: 2, next steps: 2." in draft.summary


# ------------------------------------------------------------------ REST round trip


def test_close_then_handoff_over_rest_offline(client: Client, elephant: Elephant) -> None:
    headers = {"X-Elephant-Tenant": "sessions"}
    response = client.post(
        "/sessions/close",
        json={"project": "elephant", "transcript": TRANSCRIPT, "session_date": "2025-06-01"},
        headers=headers,
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["turns"] == 5 and body["job_statuses"] == ["done"] and body["facts"] > 0
    handoff = body["handoff"]
    assert handoff["generator"] == "offline"
    assert handoff["decisions"][0].startswith("We decided to use Postgres 18")
    fetched = client.get("/handoff", params={"project": "elephant"}, headers=headers)
    assert fetched.status_code == 200
    assert fetched.json() == handoff
    with elephant.db.tenant("sessions") as conn:
        turns = conn.execute("SELECT speaker, text FROM turns ORDER BY seq").fetchall()
        meta = conn.execute("SELECT metadata FROM conversations").fetchone()
        facts = conn.execute("SELECT count(*) FROM facts").fetchone()
    assert turns[0] == (
        "Alice",
        "We decided to use Postgres 18 with pgvector for the memory store.",
    )
    assert meta is not None and meta[0]["project"] == "elephant"
    assert facts is not None and facts[0] == body["facts"]


def test_latest_handoff_wins_and_tenants_are_isolated(client: Client) -> None:
    headers = {"X-Elephant-Tenant": "sessions-latest"}
    for text in ("Ana: We decided to ship on Friday.", "Ana: We chose to ship on Monday."):
        response = client.post(
            "/sessions/close", json={"project": "p1", "transcript": text}, headers=headers
        )
        assert response.status_code == 201
    latest = client.get("/handoff", params={"project": "p1"}, headers=headers).json()
    assert latest["decisions"] == ["We chose to ship on Monday."]
    other = client.get(
        "/handoff", params={"project": "p1"}, headers={"X-Elephant-Tenant": "someone-else"}
    )
    assert other.status_code == 404
    assert "close a session" in other.json()["message"]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"project": "p"}, "exactly one of transcript"),
        (
            {"project": "p", "transcript": "A: hi", "turns": [{"speaker": "A", "text": "hi"}]},
            "exactly one",
        ),
        ({"project": "", "transcript": "A: hi"}, "project"),
        ({"project": "p", "transcript": "   "}, "exactly one"),
        ({"project": "p", "turns": [{"speaker": "A", "text": ""}]}, "text"),
        ({"project": "p", "transcript": "A: hi", "session_date": "someday"}, "session_date"),
    ],
)
def test_bad_close_requests_are_422_and_write_nothing(
    client: Client, elephant: Elephant, body: dict[str, Any], fragment: str
) -> None:
    response = client.post("/sessions/close", json=body, headers={"X-Elephant-Tenant": "bad-close"})
    assert response.status_code == 422, response.text
    assert fragment in response.json()["message"]
    assert count_rows(elephant.db, "bad-close", "turns") == 0
    assert count_rows(elephant.db, "bad-close", "handoffs") == 0


def test_handoff_needs_a_project(client: Client) -> None:
    assert client.get("/handoff").status_code == 422
    assert client.get("/handoff", params={"project": "never-closed"}).status_code == 404


# ------------------------------------------------------------------ with an LLM


GATE = {"relevance": 8, "specificity": 8, "reason": "concrete project decision"}


def test_llm_handoff_is_stored_with_usage(elephant: Elephant) -> None:
    llm = ScriptedLLM(
        {
            "GateScores": [GATE],
            "Handoff": [
                {
                    "summary": "Chose the store; Redis still open.",
                    "decisions": ["Postgres 18 + pgvector for the store", "  "],
                    "open_questions": ["Keep Redis as a cache?"],
                    "next_steps": ["Write the handoffs migration", "Benchmark at 100k rows"],
                }
            ],
        }
    )
    result = close_session(
        with_llm(elephant, llm),
        "sessions-llm",
        SessionCloseIn(project="elephant", transcript=TRANSCRIPT),
        wait=False,
    )
    handoff = result.handoff
    assert handoff.generator == "scripted:fake-1"
    assert handoff.decisions == ["Postgres 18 + pgvector for the store"]  # blank dropped
    assert get_handoff(elephant, "sessions-llm", "elephant") == handoff
    prompt = next(call[2] for call in llm.calls if call[0] == "Handoff")
    assert prompt.count("<transcript>") == 1 and '"We decided to use Postgres 18' in prompt
    with elephant.db.tenant("sessions-llm") as conn:
        usage = conn.execute("SELECT ok FROM llm_usage WHERE operation = 'handoff'").fetchall()
        meta = conn.execute("SELECT metadata FROM handoffs").fetchone()
    assert usage == [(True,)]
    assert meta is not None and meta[0]["prompt_version"] == "handoff-v1"


def test_llm_failure_falls_back_to_the_offline_handoff(elephant: Elephant) -> None:
    llm = ScriptedLLM({"GateScores": [GATE], "Handoff": [LLMError("HTTP 529 overloaded")]})
    result = close_session(
        with_llm(elephant, llm),
        "sessions-down",
        SessionCloseIn(project="elephant", transcript=TRANSCRIPT),
        wait=False,
    )
    handoff = result.handoff
    assert handoff.generator.startswith("offline (fallback: HTTP 529 overloaded")
    assert handoff.decisions[0].startswith("We decided to use Postgres 18")
    assert isinstance(result.note, str) and "LLM unavailable" in result.note
    assert count_rows(elephant.db, "sessions-down", "turns") == 5  # the transcript is kept
    with elephant.db.tenant("sessions-down") as conn:
        usage = conn.execute(
            "SELECT ok, error FROM llm_usage WHERE operation = 'handoff'"
        ).fetchall()
    assert usage == [(False, "HTTP 529 overloaded")]
