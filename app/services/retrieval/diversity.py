"""Turn diversity: a result that only repeats conversation turns already shown above it
moves below the results that bring new turns.

Facts are extracted from the turns a window holds, often several from one turn, so
without this a window and its own facts can fill the first results while the turn that
answers the question waits below them. Results without source turns (notes) never move.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

Hit = TypeVar("Hit")


def new_turns_first(hits: Sequence[Hit], turns_of: Callable[[Hit], Sequence[str]]) -> list[Hit]:
    """Stable: results that add turns keep their order, repeats keep theirs below them."""
    covered: set[str] = set()
    fresh: list[Hit] = []
    repeats: list[Hit] = []
    for hit in hits:
        turns = set(turns_of(hit))
        if turns and turns <= covered:
            repeats.append(hit)
        else:
            fresh.append(hit)
            covered |= turns
    return fresh + repeats
