"""new_turns_first: results that only repeat shown turns move below those with new turns."""

from __future__ import annotations

from app.services.retrieval.diversity import new_turns_first

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
