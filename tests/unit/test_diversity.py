"""new_turns_first: results that only repeat shown turns move below those with new turns."""

from __future__ import annotations

from app.services.retrieval.diversity import (
    estimated_tokens,
    keyword_best_first,
    new_turns_first,
    within_budget,
)

TURNS = {
    "window-a": ["D1:1", "D1:2", "D1:3"],
    "fact-a1": ["D1:2"],
    "fact-a2": ["D1:2", "D1:3"],
    "window-b": ["D1:3", "D1:4"],
    "note": [],
    "fact-b": ["D1:4"],
    "fact-c": ["D2:7"],
}


def order(names: list[str]) -> list[str]:
    return new_turns_first(names, lambda name: TURNS[name])


def test_repeats_move_below_new_turns_in_their_own_order() -> None:
    ranked = ["window-a", "fact-a1", "fact-a2", "window-b", "fact-b", "fact-c"]
    assert order(ranked) == ["window-a", "window-b", "fact-c", "fact-a1", "fact-a2", "fact-b"]


def test_a_partly_new_result_stays_and_notes_never_move() -> None:
    ranked = ["fact-a1", "note", "window-a", "note", "fact-a2"]
    assert order(ranked) == ["fact-a1", "note", "window-a", "note", "fact-a2"]


def test_nothing_repeated_keeps_the_order() -> None:
    ranked = ["fact-c", "window-b", "window-a"]
    assert order(ranked) == ranked


def test_a_budget_is_filled_in_rank_order_skipping_what_does_not_fit() -> None:
    texts = {"long": "x" * 400, "short": "y" * 40, "repeat": "z" * 8, "other": "w" * 80}
    turns = {"long": ["t1", "t2"], "short": ["t3"], "repeat": ["t3"], "other": ["t4"]}
    order = ["short", "long", "repeat", "other"]
    chosen = within_budget(order, 40, texts.__getitem__, turns.__getitem__)
    # 10 tokens of "short"; "long" (100) does not fit, "repeat" adds no turn, "other" (20) fits
    assert chosen == ["short", "other"]
    assert within_budget(order, 200, texts.__getitem__, turns.__getitem__) == [
        "short",
        "long",
        "other",
    ]
    # "short" does not fit in 5, so "repeat" brings its turn first
    assert within_budget(order, 5, texts.__getitem__, turns.__getitem__) == ["repeat"]
    assert within_budget(order, 1, texts.__getitem__, turns.__getitem__) == []
    assert estimated_tokens("") == 0 and estimated_tokens("abcde") == 2


def test_the_keyword_lanes_best_goes_first_only_from_near_the_top() -> None:
    best = {"c"}
    flat = {"a": 0.0, "b": 0.0, "c": 0.0, "d": 0.0}
    order = ["a", "b", "c", "d"]
    assert keyword_best_first(order, 3, best.__contains__, flat.__getitem__) == [
        "c",
        "a",
        "b",
        "d",
    ]
    assert keyword_best_first(order, 2, best.__contains__, flat.__getitem__) == order  # low
    assert keyword_best_first(order, 0, best.__contains__, flat.__getitem__) == order
    assert keyword_best_first(["c", "a"], 3, best.__contains__, flat.__getitem__) == ["c", "a"]
    # a result above it that leads by a prior (a date the question names) stays first
    dated = {**flat, "b": 0.05}
    assert keyword_best_first(order, 3, best.__contains__, dated.__getitem__) == order
