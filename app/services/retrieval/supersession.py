"""Superseded memories: marked, and below what superseded them for the present.

After "Alice lives in Berlin" and then "Alice moved to Munich", the contradiction check
closes the Berlin fact (status superseded, superseded_by the Munich fact), but the
Berlin *note* is still a memory every lane finds, and it was found first for "Where
does Alice live". A memory whose facts were all superseded
(sql/retrieval/superseded_memories.sql) is marked in the result (``superseded_by``: the
memories that superseded it) and, for a question about the present (no ``as_of``, not
``include_expired``), goes right below the last of the results that superseded it (the
newer memory, or the newer fact) and answer the question about as well (half its fused
score or more), scored as that place (ordering.py). Without one of them among the
results it keeps its place: nothing in the list says more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from app.db.resources import load_sql
from app.db.runtime import Connection
from app.services.retrieval.ordering import settled
from app.services.retrieval.schemas import SearchHit

SUCCESSOR_SHARE = 0.5  # of the superseded memory's fused score (_answers_as_well)


@dataclass(frozen=True, slots=True)
class Superseded:
    """A superseded memory's successors: the newer facts and the memories they came from."""

    memories: frozenset[str]
    facts: frozenset[str]

    def by(self, hit: SearchHit) -> bool:
        """Whether ``hit`` is one of the results that superseded the memory."""
        return hit.id in (self.facts if hit.kind == "fact" else self.memories)


def superseded(conn: Connection, tenant: str, hits: Sequence[SearchHit]) -> dict[str, Superseded]:
    """The superseded memories among ``hits``, by id (one query; none without memories)."""
    memories = [hit.id for hit in hits if hit.kind != "fact"]
    if not memories:
        return {}
    rows = conn.execute(
        load_sql("retrieval/superseded_memories.sql"), {"tenant": tenant, "memories": memories}
    ).fetchall()
    return {
        str(memory): Superseded(
            frozenset(str(m) for m in newer_memories or []),
            frozenset(str(f) for f in newer_facts or []),
        )
        for memory, newer_memories, newer_facts in rows
    }


def marked(hits: Sequence[SearchHit], found: dict[str, Superseded]) -> list[SearchHit]:
    """Each superseded memory names the memories that superseded it."""
    return [
        msgspec.structs.replace(hit, superseded_by=sorted(found[hit.id].memories))
        if hit.kind != "fact" and hit.id in found
        else hit
        for hit in hits
    ]


def below_successors(hits: Sequence[SearchHit], found: dict[str, Superseded]) -> list[SearchHit]:
    """Each superseded memory right below the last result that superseded it (stable;
    a chain Berlin -> Munich -> Hamburg puts Hamburg, Munich, Berlin in that order)."""
    order = list(hits)
    for _ in range(len(found)):  # a chain of n moves settles in n passes
        moved = False
        for hit in [hit for hit in order if hit.kind != "fact" and hit.id in found]:
            where = order.index(hit)
            successors = [
                i
                for i, other in enumerate(order)
                if other is not hit and found[hit.id].by(other) and _answers_as_well(other, hit)
            ]
            if successors and max(successors) > where:
                order.insert(max(successors), order.pop(where))
                moved = True
        if not moved:
            break
    return settled(order)


def _answers_as_well(successor: SearchHit, memory: SearchHit) -> bool:
    """Whether the successor is about as relevant to the question as the superseded memory
    (fused score at least SUCCESSOR_SHARE of its): only then is the question about what
    changed. A memory says more than the facts taken from it, and a contradiction found
    offline may close a fact wrongly ("Dana's sourdough starter ... lives in the fridge
    of the Oslo flat" closed by "Dana moved to Trondheim"): a question about the starter
    must still find its note first, not the move."""
    return successor.rrf + successor.prior >= SUCCESSOR_SHARE * (memory.rrf + memory.prior)


def about_the_present(as_of: object, include_expired: bool) -> bool:
    """A question about now: no ``as_of`` instant and not asking for expired facts too."""
    return as_of is None and not include_expired


def is_superseded(hit: SearchHit) -> bool:
    return isinstance(hit.superseded_by, list)
