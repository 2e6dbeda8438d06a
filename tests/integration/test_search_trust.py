"""Results a reader can trust (issue 41): the list is in the order of the score it shows
(REST and MCP), a note and the fact extracted from it with the same text take one place,
and a memory whose facts were all superseded ranks below the memory that superseded them
and says so."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from litestar.testing import TestClient

from app.api import create_app
from app.config import Settings
from app.mcp.server import build_server
from app.services.memory.commit import commit_conversation, commit_note
from app.services.memory.schemas import ConversationIn, NoteIn
from app.services.retrieval.one_place import words
from app.services.runtime import Elephant
from elephant_client import Elephant as ElephantClient
from tests.conftest import api_client, make_settings, operator_key, serve_in_thread
from tests.console_support import ConsoleSite, signed_in_client

Client_ = TestClient  # type: ignore[type-arg]
T = "trust"
TURNS = [
    ("Jon", "The studio lease is finally signed, we open next month."),
    ("Gina", "Congrats! I have news too: I adopted a puppy named Biscuit on Saturday."),
    ("Jon", "Aww, what breed is it?"),
    ("Gina", "A beagle mix, very loud and very sweet."),
    ("Jon", "I need to pick paint colours for the studio walls this week."),
    ("Gina", "Go with warm greys, they look great under spotlights."),
]
QUESTIONS = [
    "Where does Alice live",
    "Where did Alice move?",
    "What is the name of Gina's new puppy?",
    "What breed is Gina's puppy?",
    "What colour should Jon paint the studio?",
]
BODIES: list[dict[str, Any]] = [
    {},
    {"diversify": True, "max_tokens": 3000, "explain": True},
    {"diversify": False, "limit": 20},
]


@pytest.fixture(scope="module")
def settings(pg_data_dir: Path, new_database: Callable[..., str]) -> Settings:
    return make_settings(
        pg_data_dir, embedded={"database": new_database("search-trust")}, mcp={"tenant": T}
    )


@pytest.fixture(scope="module")
def seeded(elephant: Elephant) -> dict[str, str]:
    """The tenant's memories; the notes' ids by city."""
    berlin = commit_note(
        elephant,
        T,
        NoteIn(text="Alice lives in Berlin", occurred_at="2021-03-01", force=True),
        wait=True,
    )
    munich = commit_note(
        elephant,
        T,
        NoteIn(text="Alice moved to Munich", occurred_at="2024-06-01", force=True),
        wait=True,
    )
    turns = [
        {"speaker": who, "text": text, "id": f"D1:{n}"} for n, (who, text) in enumerate(TURNS, 1)
    ]
    conversation = {"turns": turns, "window_size": 2, "stride": 2, "force": True}
    assert commit_conversation(
        elephant, T, ConversationIn.model_validate(conversation), wait=True
    ).facts
    assert berlin.memory_id and munich.memory_id
    return {"berlin": berlin.memory_id, "munich": munich.memory_id}


@pytest.fixture(scope="module")
def client(settings: Settings, elephant: Elephant, seeded: dict[str, str]) -> Iterator[Client_]:
    with api_client(settings, elephant) as test_client:
        yield test_client


def rest(client: Client_, query: str, **body: Any) -> list[dict[str, Any]]:
    response = client.post(
        "/search", json={"query": query, **body}, headers={"X-Elephant-Tenant": T}
    )
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    return results


def test_the_listed_order_is_the_order_of_the_shown_score(client: Client_) -> None:
    """With turn diversity, the keyword lane's best first and a token budget, each moving
    results after the statement, the score shown is still the one the list is sorted by;
    the fused score stays in explain."""
    for query in QUESTIONS:
        for body in BODIES:
            hits = rest(client, query, **body)
            scores = [hit["score"] for hit in hits]
            assert hits and scores == sorted(scores, reverse=True), (query, body, scores)
            if body.get("explain"):
                assert all("fused_score" in hit and "rrf" in hit for hit in hits)


def test_a_note_and_its_fact_with_the_same_text_take_one_place(client: Client_) -> None:
    hits = rest(client, "Where did Alice move?", explain=True)
    munich = [hit for hit in hits if "Munich" in hit["text"]]
    assert [hit["kind"] for hit in munich] == ["note"], munich
    fact = munich[0]["also"]
    assert len(fact) == 1 and fact[0] not in {hit["id"] for hit in hits}
    for query in QUESTIONS:
        texts = [" ".join(words(hit["text"])) for hit in rest(client, query)[:10]]
        assert len(texts) == len(set(texts)), (query, texts)


def test_a_superseded_note_ranks_below_the_note_that_superseded_it(
    client: Client_, seeded: dict[str, str]
) -> None:
    hits = rest(client, "Where does Alice live")
    assert hits[0]["id"] == seeded["munich"] and "superseded_by" not in hits[0]
    berlin = next(hit for hit in hits if hit["id"] == seeded["berlin"])
    assert berlin["superseded_by"] == [seeded["munich"]]
    # about the past, it is still marked but no longer moved for the newer note
    past = rest(client, "Where does Alice live", filters={"as_of": "2022-01-01"})
    assert next(hit for hit in past if hit["id"] == seeded["berlin"])["superseded_by"]


def test_mcp_search_lists_the_same_order_by_its_score(
    settings: Settings, elephant: Elephant, client: Client_, seeded: dict[str, str]
) -> None:
    server = build_server(settings, lambda: elephant)

    async def search(query: str) -> list[dict[str, Any]]:
        async with Client(server) as mcp:
            result = await mcp.call_tool("search", {"query": query})
            hits: list[dict[str, Any]] = result.structured_content["results"]
            return hits

    for query in QUESTIONS:
        hits = asyncio.run(search(query))
        scores = [hit["score"] for hit in hits]
        assert scores == sorted(scores, reverse=True), (query, scores)
        assert [hit["id"] for hit in hits] == [hit["id"] for hit in rest(client, query)]
    alice = asyncio.run(search("Where does Alice live"))
    assert alice[0]["id"] == seeded["munich"] and "superseded_by" not in alice[0]
    berlin = next(hit for hit in alice if hit["id"] == seeded["berlin"])
    assert berlin["superseded_by"] == [seeded["munich"]]


def test_the_client_library_reads_the_same_order_and_marks(
    settings: Settings, elephant: Elephant, seeded: dict[str, str]
) -> None:
    app = create_app(settings, elephant, bind="127.0.0.1")
    with (
        serve_in_thread(app) as url,
        ElephantClient(url, api_key=operator_key(elephant.db, "trust"), tenant=T) as memory,
    ):
        hits = memory.search("Where does Alice live", explain=True).results
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True)
    assert hits[0].id == seeded["munich"] and hits[0].also
    assert all(hit.fused_score is not None for hit in hits)
    berlin = next(hit for hit in hits if hit.id == seeded["berlin"])
    assert berlin.superseded_by == [seeded["munich"]]


def test_the_console_lists_by_the_score_it_shows_and_marks_the_superseded_note(
    console_site: ConsoleSite, elephant: Elephant
) -> None:
    for text, when in (
        ("Alice lives in Berlin", "2021-03-01"),
        ("Alice moved to Munich", "2024-06-01"),
    ):
        note = NoteIn(text=text, occurred_at=when, force=True)
        commit_note(elephant, console_site.tenant, note, wait=True)
    with signed_in_client(console_site, console_site.keys["read"]) as browser:
        page = browser.get(
            f"/ui/t/{console_site.tenant}/search", params={"query": "Where does Alice live"}
        )
    assert page.status_code == 200, page.text[:800]
    scores = [float(value) for value in re.findall(r"score <strong>([0-9.]+)</strong>", page.text)]
    assert len(scores) >= 2 and scores == sorted(scores, reverse=True), scores
    texts = re.findall(r'<p class="hit-text">(.*?)</p>', page.text, re.S)
    assert "Munich" in texts[0] and 'class="badge warn superseded"' in page.text
