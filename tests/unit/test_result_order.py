"""The order a caller reads: the ranking score, one place for one text, superseded memories
below their successors (app/services/retrieval/ordering.py, one_place.py, supersession.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from app.services.retrieval.diversity import keyword_best_first, new_turns_first
from app.services.retrieval.lanes import LANES, ranks_of
from app.services.retrieval.one_place import one_place, words
from app.services.retrieval.ordering import lifted, reranked, settled
from app.services.retrieval.schemas import SearchHit
from app.services.retrieval.supersession import Superseded, below_successors, marked


def hit(id_: str, score: float, text: str = "", **fields: Any) -> SearchHit:
    base: dict[str, Any] = {
        "kind": "note",
        "source": None,
        "created_at": datetime(2024, 1, 1, tzinfo=UTC),
        "event_at": None,
        "valid_to": None,
        "subject": None,
        "status": None,
        "memory_id": None,
        "source_turn_ids": [],
        "importance": 50.0,
        "ranks": ranks_of([None] * len(LANES)),
        "rrf": score,
        "prior": 0.0,
        "variants": [1],
    }
    return SearchHit(id=id_, score=score, text=text or f"text of {id_}", **{**base, **fields})


def scores(hits: list[SearchHit]) -> list[float]:
    return [h.score for h in hits]


def ids(hits: list[SearchHit]) -> list[str]:
    return [h.id for h in hits]


def test_a_result_moved_down_shows_at_most_the_score_above_it() -> None:
    hits = [
        hit("a", 0.30, source_turn_ids=["1"]),
        hit("b", 0.18, kind="fact", source_turn_ids=["1"]),
        hit("c", 0.08, source_turn_ids=["2"]),
    ]
    moved = new_turns_first(hits, lambda h: h.source_turn_ids)
    assert ids(moved) == ["a", "c", "b"] and scores(moved) == [0.30, 0.08, 0.18]
    shown = settled(moved)
    assert ids(shown) == ["a", "c", "b"] and scores(shown) == [0.30, 0.08, 0.08]
    assert shown[2].rrf == 0.18  # the fused score is kept


def test_a_result_moved_up_takes_the_score_of_the_place() -> None:
    hits = [hit("a", 0.35), hit("b", 0.18), hit("c", 0.10)]
    moved = keyword_best_first(hits, 3, lambda h: h.id == "b", lambda h: h.prior)
    shown = lifted(hits, moved)
    assert ids(shown) == ["b", "a", "c"] and scores(shown) == [0.35, 0.35, 0.10]


def test_reranked_results_show_the_rerankers_score() -> None:
    hits = [hit("a", 0.3, rerank_score=0.2), hit("b", 0.2, rerank_score=0.9), hit("c", 0.1)]
    shown = reranked(hits)
    assert ids(shown) == ["b", "a", "c"] and scores(shown) == [0.9, 0.2, 0.1]


def test_words_ignore_case_punctuation_and_spacing() -> None:
    assert words("Alice  moved to MUNICH.") == words("alice moved to munich") != []


def test_a_note_and_its_fact_with_the_same_text_take_one_place() -> None:
    hits = [
        hit("fact", 0.36, "Alice moved to Munich.", kind="fact", memory_id="note"),
        hit("other", 0.20, "Bob lives in Rome"),
        hit("note", 0.18, "Alice moved to Munich"),
    ]
    shown = one_place(hits)
    assert ids(shown) == ["note", "other"]
    assert shown[0].also == ["fact"] and shown[0].score == 0.36
    assert scores(shown) == sorted(scores(shown), reverse=True)


def test_a_fact_nearly_its_memorys_words_folds_but_a_different_one_does_not() -> None:
    note = "Priya's cat Biscuit is allergic to chicken so she buys salmon kibble"
    hits = [
        hit("note", 0.3, note),
        hit("near", 0.2, note.replace(" so", ", so"), kind="fact", memory_id="note"),
        hit("part", 0.1, "Biscuit is allergic to chicken", kind="fact", memory_id="note"),
    ]
    assert ids(one_place(hits)) == ["note", "part"]


def test_two_facts_with_the_same_text_keep_the_first() -> None:
    hits = [
        hit("f1", 0.3, "Gina adopted a puppy", kind="fact", memory_id="w1"),
        hit("f2", 0.2, "Gina adopted a puppy", kind="fact", memory_id="w2"),
    ]
    shown = one_place(hits)
    assert ids(shown) == ["f1"] and shown[0].also == ["f2"]


def test_a_superseded_memory_goes_below_its_successor_and_is_marked() -> None:
    hits = [hit("berlin", 0.18), hit("munich", 0.35), hit("other", 0.05)]
    found = {"berlin": Superseded(frozenset({"munich"}), frozenset({"munich-fact"}))}
    shown = below_successors(marked(hits, found), found)
    assert ids(shown) == ["munich", "berlin", "other"]
    assert shown[1].superseded_by == ["munich"]
    assert scores(shown) == sorted(scores(shown), reverse=True)


def test_a_chain_of_supersessions_puts_the_newest_first() -> None:
    hits = [hit("berlin", 0.3), hit("munich", 0.2), hit("hamburg", 0.1)]
    found = {
        "berlin": Superseded(frozenset({"munich"}), frozenset()),
        "munich": Superseded(frozenset({"hamburg"}), frozenset()),
    }
    assert ids(below_successors(hits, found)) == ["hamburg", "munich", "berlin"]


def test_a_superseded_memory_without_its_successor_keeps_its_place() -> None:
    hits = [hit("berlin", 0.3), hit("other", 0.2)]
    found = {"berlin": Superseded(frozenset({"munich"}), frozenset())}
    assert ids(below_successors(hits, found)) == ["berlin", "other"]


def test_a_successor_that_answers_the_question_far_worse_does_not_take_the_place() -> None:
    """A wrongly closed fact (the starter's note, closed by "Dana moved to Trondheim"):
    the question is about the starter, and the move scores far below it."""
    hits = [hit("starter", 0.30), hit("espresso", 0.17), hit("moved", 0.13)]
    found = {"starter": Superseded(frozenset({"moved"}), frozenset())}
    shown = below_successors(marked(hits, found), found)
    assert ids(shown) == ["starter", "espresso", "moved"]
    assert shown[0].superseded_by == ["moved"]
