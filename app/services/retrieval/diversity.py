"""Which results a caller gets: turn diversity, and a token budget filled by coverage.

Turn diversity: a result that only repeats conversation turns already shown above it
moves below the results that bring new turns.

Facts are extracted from the turns a window holds, often several from one turn, so
without this a window and its own facts can fill the first results while the turn that
answers the question waits below them. Results without source turns (notes) never move.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

Hit = TypeVar("Hit")
CHARS_PER_TOKEN = 4  # English text in a WordPiece/BPE vocabulary, roughly


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


def estimated_tokens(text: str) -> int:
    """~ tokens of ``text`` for an LLM's context (English in a BPE vocabulary: ~4 chars)."""
    return -(-len(text) // CHARS_PER_TOKEN)


def within_budget(
    hits: Sequence[Hit],
    max_tokens: int,
    text_of: Callable[[Hit], str],
    turns_of: Callable[[Hit], Sequence[str]],
) -> list[Hit]:
    """The results, in rank order, that fill ``max_tokens``: one that does not fit is
    skipped (a shorter one below may), and so is one that only repeats turns already
    given. Measured on LoCoMo (benchmarks/locomo.py, "max_tokens"): against taking the
    ranking until the first result that does not fit, every evidence turn is inside
    1,000 tokens for more questions on both halves of the split."""
    chosen: list[Hit] = []
    covered: set[str] = set()
    used = 0
    for hit in hits:
        cost = estimated_tokens(text_of(hit))
        turns = set(turns_of(hit))
        if used + cost > max_tokens or (turns and turns <= covered):
            continue
        chosen.append(hit)
        covered |= turns
        used += cost
    return chosen


def keyword_best_first(
    hits: Sequence[Hit],
    within: int,
    is_keyword_best: Callable[[Hit], bool],
    prior_of: Callable[[Hit], float],
) -> list[Hit]:
    """The keyword lane's best conversation excerpt or note goes first when fusion ranked it
    within the first ``within`` results, unless a result above it leads by a prior
    (recency, a date the question names, activation): a decisive lexical match that the
    other lanes also rank near the top is diluted by equal-weight RRF, not wrong, but
    what the caller or the question asked to lift stays lifted. On LoCoMo (tuned on
    conversations 1-5 among 2, 3, 5, 10; benchmarks/locomo.py) recall@1 0.621 -> 0.658
    there and 0.580 -> 0.633 on 6-10; every k >= 3 is unchanged (the first results are
    only reordered)."""
    for index, hit in enumerate(hits[:within]):
        if is_keyword_best(hit):
            if any(prior_of(above) > prior_of(hit) for above in hits[:index]):
                break
            return [hit, *hits[:index], *hits[index + 1 :]]
    return list(hits)
