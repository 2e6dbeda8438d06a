"""The order a caller reads, and the one score it is read by.

The statement ranks by the fused score (RRF over the lanes plus the priors). After it,
rules move results: the reranker's order, one place for one text (one_place.py), turn
diversity, the keyword lane's best first, superseded memories below what superseded
them (supersession.py). A list that is not in the order of the score it shows reads as
a bug, so every rule that moves a result also sets the score it shows, and ``score`` is
the ranking score: the list is sorted by it (ties keep their order). The fused score
stays in explain (``fused_score``, with its ``rrf`` and ``prior``), the reranker's in
``rerank_score``. The rules, one each:

- reranked: the score is the reranker's, the list sorted by it;
- lifted: a result moved up takes the score of the first one it passed (at least its own);
- settled: a result moved down shows at most the score of the one above it.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from app.services.retrieval.schemas import SearchHit


def reranked(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """Scored by the reranker (``rerank_score``), best first; a hit it did not score keeps
    its place below those it did, with at most the score above it."""
    scored = [hit for hit in hits if hit.rerank_score is not None]
    rest = [hit for hit in hits if hit.rerank_score is None]
    ordered = sorted(scored, key=lambda hit: -float(hit.rerank_score or 0.0))
    return settled([msgspec.structs.replace(hit, score=hit.rerank_score) for hit in ordered] + rest)


def settled(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """Each result shows at most the score of the result above it: what a rule moved down
    is scored as the place it fell to; the rest keep theirs."""
    shown: list[SearchHit] = []
    for hit in hits:
        if shown and hit.score > shown[-1].score:
            hit = msgspec.structs.replace(hit, score=shown[-1].score)
        shown.append(hit)
    return shown


def lifted(before: Sequence[SearchHit], after: Sequence[SearchHit]) -> list[SearchHit]:
    """``after`` is ``before`` with results moved up: each takes the best score of the
    results it passed (a rule that lifts one to the first place gives it the first
    place's score), so the list stays sorted by score."""
    position = {id(hit): index for index, hit in enumerate(before)}
    shown: list[SearchHit] = []
    for index, hit in enumerate(after):
        passed = [before[i].score for i in range(index, position.get(id(hit), index))]
        if passed and max(passed) > hit.score:
            hit = msgspec.structs.replace(hit, score=max(passed))
        shown.append(hit)
    return settled(shown)
