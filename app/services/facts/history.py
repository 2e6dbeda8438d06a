"""A fact's history: when it was true, when we knew it, what it replaced and what replaced it.

A fact carries two time ranges (app/services/facts/contradictions.py closes them): valid_from /
valid_to, when the statement held in the world, and recorded_at / expired_at, when this
memory believed it. A contradiction closes the earlier fact and points its
``superseded_by`` at the later one, so following that column both ways gives the chain
of statements about one thing ("lives in Berlin" -> "moved to Lisbon" -> ...); the
contradictions table says, per link, who judged it (detector), how sure (score) and why
(reason). Reading the history is a use of the fact, as GET /facts/{id} is.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal
from uuid import UUID

from app.db.resources import load_sql
from app.services.memory.records import FactRecord, get_fact
from app.services.runtime import Elephant

MAX_STEPS = 50  # each way: a chain longer than this is cut (and says so)


@dataclass(frozen=True, slots=True)
class ChainLink:
    """A fact of the chain. ``step``: 0 the fact asked for, -1 what it replaced directly,
    -2 what that replaced, ...; 1 what replaced it, 2 what replaced that, ..."""

    step: int
    id: str
    text: str
    subject: str | None
    status: str
    valid_from: datetime | None
    valid_to: datetime | None
    recorded_at: datetime
    expired_at: datetime | None
    superseded_by: str | None


@dataclass(frozen=True, slots=True)
class ChainContradiction:
    """A detected contradiction touching a fact of the chain: ``older`` was closed in
    favour of ``newer``. ``role`` is the asked-for fact's part in it (``other`` when the
    contradiction is between two other facts of the chain)."""

    id: int
    older_id: str
    older_text: str
    newer_id: str
    newer_text: str
    detector: str
    score: float
    reason: str
    created_at: datetime
    role: Literal["older", "newer", "other"]


@dataclass(frozen=True, slots=True)
class FactHistory:
    """The fact, its chain oldest first (itself included, at step 0), and the
    contradictions along it, newest first. ``truncated``: the chain goes on beyond
    MAX_STEPS in some direction."""

    fact: FactRecord
    chain: list[ChainLink]
    contradictions: list[ChainContradiction]
    truncated: bool


def history(elephant: Elephant, tenant: str, fact_id: UUID) -> FactHistory:
    """The fact's timeline (404 when it is not a fact of this tenant)."""
    fact = get_fact(elephant, tenant, fact_id, record_access=False)  # looking, not using
    with elephant.db.reading(tenant) as conn:
        rows = conn.execute(
            load_sql("facts/fact_chain.sql"),
            {"tenant": tenant, "fact_id": fact_id, "depth": MAX_STEPS},
        ).fetchall()
        others = [ChainLink(*row) for row in rows]
        ids = [fact.id, *(link.id for link in others)]
        found = conn.execute(
            load_sql("facts/chain_contradictions.sql"), {"tenant": tenant, "ids": ids}
        ).fetchall()
    itself = ChainLink(
        step=0,
        id=fact.id,
        text=fact.text,
        subject=fact.subject,
        status=fact.status,
        valid_from=fact.valid_from,
        valid_to=fact.valid_to,
        recorded_at=fact.recorded_at,
        expired_at=fact.expired_at,
        superseded_by=fact.superseded_by,
    )
    chain = sorted([*others, itself], key=lambda link: link.step)
    contradictions = [
        ChainContradiction(
            id=int(row[0]),
            older_id=row[1],
            older_text=row[2],
            newer_id=row[3],
            newer_text=row[4],
            detector=row[5],
            score=round(float(row[6]), 3),
            reason=row[7],
            created_at=row[8],
            role="older" if row[1] == fact.id else "newer" if row[3] == fact.id else "other",
        )
        for row in found
    ]
    steps = [link.step for link in chain]
    truncated = max(steps) >= MAX_STEPS or min(steps) <= -MAX_STEPS
    return FactHistory(fact, chain, contradictions, truncated)
