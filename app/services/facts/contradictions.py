"""Contradictions: a new fact against the most similar active facts of its subject.

The LLM judges when one is configured (a yes/no with a reason), the offline rules
otherwise. A contradiction is recorded with both ids, the detector, a score and
the reason, and the fact that was true *earlier* is closed in time: its valid_to
becomes the other's valid_from, expired_at is set and superseded_by points at
the other. Nothing is deleted.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import datetime

from app.db.resources import load_sql
from app.db.runtime import Connection
from app.prompts import contradiction as contradiction_prompt
from app.providers.embedder import Vectors
from app.providers.llm import LLMError
from app.services.common import paging
from app.services.facts.contradiction_rules import offline_contradiction
from app.services.ops.usage import complete_recorded
from app.services.runtime import Elephant


@dataclass(frozen=True)
class StoredFact:
    id: str
    text: str
    subject: str | None
    valid_from: datetime | None
    embedding: Vectors


def check(elephant: Elephant, conn: Connection, tenant: str, facts: list[StoredFact]) -> int:
    """Check a batch of just-stored facts, in order, as if they had arrived one by one."""
    subjects = [fact for fact in facts if fact.subject]
    if not subjects:
        return 0
    settings = elephant.settings.contradiction
    rows = conn.execute(
        load_sql("facts/similar_facts.sql"),
        {
            "tenant": tenant,
            "ids": [fact.id for fact in subjects],
            "subjects": [str(fact.subject).lower() for fact in subjects],
            "vectors": [fact.embedding for fact in subjects],
            "k": settings.candidates,
        },
    ).fetchall()
    candidates: dict[int, list[tuple[str, str, datetime | None, float]]] = {}
    for ordinal, other_id, other_text, other_from, similarity in rows:
        candidates.setdefault(int(ordinal) - 1, []).append(
            (str(other_id), other_text, other_from, float(similarity))
        )
    position = {fact.id: index for index, fact in enumerate(subjects)}
    closed: set[str] = set()
    found = 0
    for index, fact in enumerate(subjects):
        if fact.id in closed:
            continue
        for other_id, other_text, other_from, similarity in candidates.get(index, []):
            if similarity < settings.min_similarity or other_id in closed:
                continue
            if position.get(other_id, -1) > index:
                continue  # a later fact of this batch: it will compare itself with this one
            verdict = _judge(elephant, conn, tenant, str(fact.subject), other_text, fact.text)
            contradicts, score, reason, detector = verdict
            if not contradicts:
                continue
            older, newer = other_id, fact.id
            if (
                other_from is not None
                and fact.valid_from is not None
                and (fact.valid_from < other_from)
            ):
                older, newer = fact.id, other_id  # the new fact describes an earlier time
            _close(conn, tenant, older, newer, detector, score, reason)
            closed.add(older)
            found += 1
            if older == fact.id:
                break  # the new fact itself is closed; it supersedes nothing further
    return found


def _judge(
    elephant: Elephant, conn: Connection, tenant: str, subject: str, older: str, newer: str
) -> tuple[bool, float, str, str]:
    llm = elephant.llm
    if llm is not None:
        with contextlib.suppress(LLMError):  # recorded; the offline rules decide
            answer = complete_recorded(
                llm,
                conn,
                tenant,
                "contradiction",
                system=contradiction_prompt.SYSTEM,
                prompt=contradiction_prompt.build_prompt(subject, older, newer),
                schema=contradiction_prompt.ContradictionAnswer,
                max_tokens=300,
            ).value
            return answer.contradicts, answer.confidence, answer.reason, elephant.scorer_name
    verdict = offline_contradiction(subject, older, newer)
    detector = "offline" if llm is None else "offline (llm fallback)"
    return verdict.contradicts, verdict.score, verdict.reason, detector


def _close(
    conn: Connection, tenant: str, older: str, newer: str, detector: str, score: float, reason: str
) -> None:
    pair = {"tenant": tenant, "older": older, "newer": newer}
    inserted = conn.execute(
        load_sql("facts/insert_contradiction.sql"),
        {**pair, "detector": detector, "score": score, "reason": reason},
    ).fetchone()
    if inserted is None:
        return
    # An undated newer fact was true from when its source was written (its memory's
    # event or commit time), not from whenever this job happens to run.
    conn.execute(load_sql("facts/supersede_fact.sql"), pair)


@dataclass(frozen=True, slots=True)
class OlderFact:
    """The fact that was true earlier (closed in time unless something else reopened it)."""

    id: str
    text: str
    valid_from: datetime | None
    valid_to: datetime | None
    status: str


@dataclass(frozen=True, slots=True)
class NewerFact:
    id: str
    text: str
    valid_from: datetime | None
    status: str


@dataclass(frozen=True, slots=True)
class Contradiction:
    id: int
    detector: str
    score: float
    reason: str
    created_at: datetime
    older: OlderFact
    newer: NewerFact


@dataclass(frozen=True, slots=True)
class ContradictionList:
    """Detected contradictions, newest first; ``next_cursor`` continues (None: the last
    page). ``contradictions`` repeats ``items`` (its name before paging; deprecated)."""

    items: list[Contradiction]
    next_cursor: str | None
    contradictions: list[Contradiction]


LISTING = "contradictions"


def recent(
    elephant: Elephant, tenant: str, limit: int, cursor: str | None = None
) -> ContradictionList:
    """One page, newest first, after the cursor's contradiction when there is one."""
    paging.check_limit(limit)
    before = paging.before_id(LISTING, cursor)
    with elephant.db.reading(tenant) as conn:
        found = list_contradictions(conn, tenant, limit + 1, before)
    items = found[:limit]
    following = paging.encode(LISTING, (items[-1].id,)) if len(found) > limit else None
    return ContradictionList(items=items, next_cursor=following, contradictions=items)


def list_contradictions(
    conn: Connection, tenant: str, limit: int, before: int | None = None
) -> list[Contradiction]:
    """Newest first (by id), only those older than ``before`` when given."""
    rows = conn.execute(
        load_sql("facts/contradictions_page.sql"),
        {"tenant": tenant, "before": before, "limit": limit},
    ).fetchall()
    return [
        Contradiction(
            id=row[0],
            detector=row[1],
            score=round(float(row[2]), 3),
            reason=row[3],
            created_at=row[4],
            older=OlderFact(
                id=str(row[5]), text=row[6], valid_from=row[7], valid_to=row[8], status=row[9]
            ),
            newer=NewerFact(id=str(row[10]), text=row[11], valid_from=row[12], status=row[13]),
        )
        for row in rows
    ]
