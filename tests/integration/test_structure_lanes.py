"""The neighbour and timeline lanes of hybrid search (sql/retrieval/neighbour_lane.sql,
timeline_lane.sql) on the real stack: the window beside a hit comes in though only the hit
sounds like the question; a question about a change over time gets the subject's facts,
one per session, in time order; size 0 is off; explain shows both lanes."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from app.services.memory.commit import commit_conversation
from app.services.memory.schemas import ConversationIn
from app.services.retrieval.lanes import rank_in
from app.services.retrieval.schemas import SearchRequest, SearchResult
from app.services.retrieval.search import search
from app.services.retrieval.timeline import asks_for_timeline
from app.services.runtime import Elephant

NEIGHBOURS = "structure-neighbours"
TIMELINE = "structure-timeline"
# Five turns about a puppy, then the answer in words the question does not use, then other
# talk. Windows of 5 turns every 2: [0-4] is all about the puppy, the answer (turn 5) is
# only in the windows beside it.
PUPPY = [
    ("Bob", "Did you really adopt a puppy from the animal shelter last weekend?"),
    ("Alice", "Yes, I adopted a little beagle puppy from the shelter on Saturday."),
    ("Bob", "A beagle puppy! Adopting a shelter puppy is wonderful."),
    ("Alice", "The shelter staff said the puppy needs a name before the vet visit."),
    ("Bob", "So what name did you give the puppy you adopted?"),
    ("Alice", "Biscuit, after the cookies my grandmother used to bake."),
    ("Bob", "My car failed its inspection because of the brakes again."),
    ("Alice", "The mechanic on Elm Street fixed my gearbox cheaply last year."),
    ("Bob", "I will call him tomorrow about a new set of brake pads."),
    ("Alice", "Tell him the gearbox still shifts smoothly, he will be pleased."),
]
QUESTION = "What name did Alice give the puppy she adopted?"
# The windows lane narrowed to its best window, every other first-stage lane off: only the
# neighbour lane can bring in the window that holds the answer.
NARROW = {"windows": 1, "facts": 0, "keyword": 0, "graph": 0, "preferences": 0}
# Alice's job, one session a quarter apart; the other speaker talks about other things.
SESSIONS = [
    ("2 January 2023", "I started working as a nurse at the city hospital this week."),
    ("5 April 2023", "I was promoted to head nurse of the children's ward at the hospital."),
    ("3 July 2023", "I left the hospital and opened my own bakery downtown."),
]
OTHER_TALK = "Bob: My garden tomatoes are finally turning red this summer."
CHANGE = "How has Alice's job changed over the year?"


def _conversation(conversation_id: str, date: str, turns: list[tuple[str, str]]) -> Any:
    return ConversationIn.model_validate(
        {
            "conversation_id": conversation_id,
            "session_date": date,
            "source": "chat",
            "turns": [
                {"speaker": speaker, "text": text, "id": f"{conversation_id}:{number}"}
                for number, (speaker, text) in enumerate(turns, start=1)
            ],
        }
    )


def _store(elephant: Elephant, tenant: str) -> None:
    """The conversations, once per module's database."""
    with elephant.db.tenant(tenant) as conn:
        row = conn.execute("SELECT count(*) FROM memories").fetchone()
    if row is not None and row[0] > 0:
        return
    if tenant == NEIGHBOURS:
        talk = _conversation("D1", "8 May 2023", PUPPY)
        commit_conversation(elephant, tenant, talk, wait=True)
        return
    for number, (date, said) in enumerate(SESSIONS, start=1):
        turns = [("Alice", said), ("Bob", OTHER_TALK.removeprefix("Bob: "))]
        commit_conversation(elephant, tenant, _conversation(f"S{number}", date, turns), wait=True)


def _search(elephant: Elephant, tenant: str, query: str, lanes: dict[str, int]) -> SearchResult:
    _store(elephant, tenant)
    asked = SearchRequest(query=query, limit=20, lanes=lanes, explain=True)
    return search(elephant, tenant, asked, record_access=False)


def _turns(result: SearchResult) -> set[str]:
    return {turn for hit in result.hits for turn in hit.source_turn_ids}


def test_a_window_beside_a_hit_comes_in(elephant: Elephant) -> None:
    alone = _search(elephant, NEIGHBOURS, QUESTION, {**NARROW, "neighbours": 0})
    assert len(alone.hits) == 1 and "D1:6" not in _turns(alone), alone.hits  # the seed
    assert all(rank_in(hit.ranks, "neighbours") is None for hit in alone.hits)

    found = _search(elephant, NEIGHBOURS, QUESTION, {**NARROW, "neighbours": 2})
    beside = [hit for hit in found.hits if rank_in(hit.ranks, "neighbours") is not None]
    # the seed stays (rank 1 of the windows lane ties a neighbour's rank 1: either first)
    assert beside and alone.hits[0].id in {hit.id for hit in found.hits[:2]}
    assert any("D1:6" in hit.source_turn_ids for hit in beside), beside  # the answer
    assert all(rank_in(hit.ranks, "windows") is None for hit in beside)
    assert found.explain is not None and found.explain.lanes["neighbours"] == 2


def test_size_zero_turns_the_neighbour_lane_off(elephant: Elephant) -> None:
    off = _search(elephant, NEIGHBOURS, QUESTION, {"neighbours": 0})
    assert all(rank_in(hit.ranks, "neighbours") is None for hit in off.hits)
    assert off.explain is not None and off.explain.lanes["neighbours"] == 0


def test_a_timeline_question_gets_the_subjects_facts_in_time_order(elephant: Elephant) -> None:
    assert asks_for_timeline(CHANGE)
    result = _search(elephant, TIMELINE, CHANGE, {"timeline": 5})
    assert result.explain is not None and result.explain.lanes["timeline"] == 5
    timeline = sorted(
        (hit for hit in result.hits if rank_in(hit.ranks, "timeline") is not None),
        key=lambda hit: rank_in(hit.ranks, "timeline") or 0,
    )
    assert len(timeline) == len(SESSIONS), [hit.text for hit in result.hits]
    assert all(hit.kind == "fact" and (hit.subject or "").lower() == "alice" for hit in timeline)
    sessions = [hit.source_turn_ids[0].split(":")[0] for hit in timeline]
    assert sessions == ["S1", "S2", "S3"], [(hit.event_at, hit.text) for hit in timeline]
    dates = [hit.event_at for hit in timeline]
    assert all(a is not None and b is not None and a < b for a, b in pairwise(dates)), dates


def test_the_timeline_lane_waits_for_a_timeline_question(elephant: Elephant) -> None:
    question = "What does Alice do at the hospital?"
    assert not asks_for_timeline(question)
    by_setting = _with_timeline(elephant, 5)
    result = _search(by_setting, TIMELINE, question, {})
    assert result.explain is not None and result.explain.lanes["timeline"] == 0
    assert all(rank_in(hit.ranks, "timeline") is None for hit in result.hits)
    asked = _search(by_setting, TIMELINE, CHANGE, {})
    assert asked.explain is not None and asked.explain.lanes["timeline"] == 5
    assert any(rank_in(hit.ranks, "timeline") is not None for hit in asked.hits)
    off = _search(by_setting, TIMELINE, CHANGE, {"timeline": 0})
    assert all(rank_in(hit.ranks, "timeline") is None for hit in off.hits)


def test_explain_shows_both_lanes(elephant: Elephant) -> None:
    result = _search(elephant, NEIGHBOURS, QUESTION, {})
    assert result.explain is not None
    assert {"neighbours", "timeline"} <= set(result.explain.lanes)
    assert {"neighbours", "timeline"} <= set(type(result.hits[0].ranks).__struct_fields__)


def _with_timeline(elephant: Elephant, size: int) -> Elephant:
    """The same stack with search.timeline set."""
    search_settings = elephant.settings.search.model_copy(update={"timeline": size})
    settings = elephant.settings.model_copy(update={"search": search_settings})
    return Elephant(settings=settings, db=elephant.db, embedder=elephant.embedder, llm=None)


def test_timeline_words_are_grammar_not_phrasings() -> None:
    for question in (
        "In what order did Sam visit Rome, Oslo and Lima?",
        "What has Priya been reading since March?",
        "Does Tom still play the cello?",
        "How did Mei's view of remote work evolve?",
        "What did Ana do after she moved to Porto?",
    ):
        assert asks_for_timeline(question), question
    for question in ("When did Sam visit Rome?", "Where does Alice live?", "What is Ben's dog?"):
        assert not asks_for_timeline(question), question
