"""Facts speak for their windows: a found fact lifts the window holding its turn."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from app.config import Settings
from app.services.memory.commit import commit_conversation
from app.services.memory.schemas import ConversationIn
from app.services.retrieval.lanes import LaneSizes
from app.services.retrieval.schemas import SearchHit, SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant
from tests.conftest import make_settings

T = "support"
QUERY = "What is the name of Gina's new puppy?"


@pytest.fixture(scope="module")
def settings(pg_data_dir: Path, new_database: Callable[..., str]) -> Settings:
    return make_settings(pg_data_dir, embedded={"database": new_database("fact-support")})


@pytest.fixture(scope="module")
def talk(elephant: Elephant) -> Elephant:
    turns = [
        ("Jon", "The studio lease is finally signed, we open next month."),
        ("Gina", "Congrats! I have news too: I adopted a puppy named Biscuit on Saturday."),
        ("Jon", "Aww, what breed is it?"),
        ("Gina", "A beagle mix, very loud and very sweet."),
        ("Jon", "I need to pick paint colours for the studio walls this week."),
        ("Gina", "Go with warm greys, they look great under spotlights."),
        ("Jon", "Good call, and the floor will be polished concrete."),
        ("Gina", "The dance classes will look amazing in there."),
    ]
    conversation = ConversationIn.model_validate(
        {
            "turns": [
                {"speaker": who, "text": text, "id": f"D1:{n}"}
                for n, (who, text) in enumerate(turns, 1)
            ],
            "window_size": 2,
            "stride": 2,
            "force": True,
        }
    )
    result = commit_conversation(elephant, T, conversation, wait=True)
    assert result.facts
    return elephant


def with_support(elephant: Elephant, value: float) -> Elephant:
    search_settings = elephant.settings.search.model_copy(update={"fact_support": value})
    return Elephant(
        settings=elephant.settings.model_copy(update={"search": search_settings}),
        db=elephant.db,
        embedder=elephant.embedder,
        llm=None,
    )


def run(elephant: Elephant, lanes: LaneSizes | None = None) -> list[SearchHit]:
    request = SearchRequest(
        query=QUERY, limit=20, explain=True, diversify=False, lanes=lanes or LaneSizes()
    )
    return search(elephant, T, request, record_access=False).hits


def test_a_window_gains_the_score_of_its_best_fact(talk: Elephant) -> None:
    plain = {hit.id: hit for hit in run(with_support(talk, 0.0))}
    supported = {hit.id: hit for hit in run(with_support(talk, 1.0))}
    with talk.db.tenant(T) as conn:
        owners = dict(conn.execute("SELECT id::text, memory_id::text FROM facts").fetchall())
    best: dict[str, float] = {}
    for fact_id, window_id in owners.items():
        if fact_id in plain and window_id is not None:
            best[window_id] = max(best.get(window_id, 0.0), plain[fact_id].rrf)
    assert best, "some found fact has a window"
    for window_id, support in best.items():
        before = plain[window_id].rrf if window_id in plain else 0.0
        assert supported[window_id].rrf == pytest.approx(before + support)
    puppy = next(
        hit for hit in supported.values() if "Biscuit" in hit.text and hit.kind == "window"
    )
    assert puppy.id in best


def test_a_window_no_lane_found_comes_in_through_its_fact(talk: Elephant) -> None:
    lanes = LaneSizes(windows=1, facts=15, keyword=0, graph=0)
    plain = run(with_support(talk, 0.0), lanes)
    supported = run(with_support(talk, 1.0), lanes)
    windows_before = {hit.id for hit in plain if hit.kind == "window"}
    windows_after = {hit.id for hit in supported if hit.kind == "window"}
    assert len(windows_before) == 1
    assert windows_after > windows_before
    brought = [hit for hit in supported if hit.id in windows_after - windows_before]
    assert all(hit.ranks.windows is None for hit in brought)


def test_facts_only_searches_bring_in_no_windows(talk: Elephant) -> None:
    request = SearchRequest(query=QUERY, filters={"kind": "fact"})
    hits = search(with_support(talk, 1.0), T, request, record_access=False).hits
    assert hits and all(hit.kind == "fact" for hit in hits)
