"""One place for one text: results that say the same thing are shown once.

A note and the fact extracted from it often carry the same sentence ("Alice moved to
Munich"), and both were found by every lane, so they took two of the first places. Here
results whose normalised text is the same (case, accents' forms, punctuation and spacing
aside), and a fact whose words are nearly those of the memory it was made from (token
sets with Jaccard >= NEAR), take one place: the one that carries more context (a window
or note over a fact; else the first), at the better of their places and with the better
score (ordering.py: a result moved up takes the score of the place). The others are
named in its ``also``. A fact's turns are its memory's, so folding a fact into its
memory loses no turn.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

import msgspec

from app.services.retrieval.ordering import settled
from app.services.retrieval.schemas import SearchHit

NEAR = 0.85  # Jaccard of two token sets: "nearly the same words"
# Longer texts (conversation windows) are compared as they are: reading the words of
# every window of a 200-result pool cost ~10 ms of Python, and a window is never a fact's
# or another window's text with only the punctuation changed.
WORDS_UP_TO = 600  # characters
_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """The text's words, case-folded, NFKC-normalised, without punctuation."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def _key(text: str) -> tuple[str, ...]:
    return tuple(words(text)) if len(text) <= WORDS_UP_TO else (text,)


def _near(fact: str, memory: str) -> bool:
    """Nearly the same words: Jaccard >= NEAR (which needs lengths within a factor 2)."""
    if not fact or len(fact) * 2 < len(memory) or len(memory) * 2 < len(fact):
        return False
    a, b = set(words(fact)), set(words(memory))
    return bool(a and b) and len(a & b) / len(a | b) >= NEAR


def _keeper(group: list[SearchHit]) -> SearchHit:
    """The one with more context: the first memory (window, note), else the first."""
    return next((hit for hit in group if hit.kind != "fact"), group[0])


def one_place(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """Results with the same text folded into one place, the group's best place (stable)."""
    root = list(range(len(hits)))

    def find(index: int) -> int:
        while root[index] != index:
            index = root[index]
        return index

    def join(a: int, b: int) -> None:
        first, second = sorted((find(a), find(b)))
        root[second] = first

    by_text: dict[tuple[str, ...], int] = {}
    memory_at: dict[str, int] = {}
    for index, hit in enumerate(hits):
        key = _key(hit.text)
        if key:
            join(index, by_text.setdefault(key, index))
        if hit.kind != "fact":
            memory_at.setdefault(hit.id, index)
    for index, hit in enumerate(hits):
        source = memory_at.get(hit.memory_id or "") if hit.kind == "fact" else None
        if source is not None and _near(hit.text, hits[source].text):
            join(index, source)
    groups: dict[int, list[SearchHit]] = {}
    for index, hit in enumerate(hits):
        groups.setdefault(find(index), []).append(hit)
    return settled([_folded(group) for _, group in sorted(groups.items())])


def _folded(group: list[SearchHit]) -> SearchHit:
    if len(group) == 1:
        return group[0]
    keeper = _keeper(group)
    return msgspec.structs.replace(
        keeper,
        score=max(hit.score for hit in group),
        also=[hit.id for hit in group if hit is not keeper],
    )
