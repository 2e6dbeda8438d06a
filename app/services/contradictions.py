"""Contradictions: a new fact against the most similar active facts of its subject.

The LLM judges when one is configured (a yes/no with a reason), the offline rules
otherwise. A contradiction is recorded with both ids, the detector, a score and
the reason, and the fact that was true *earlier* is closed in time: its valid_to
becomes the other's valid_from, expired_at is set and superseded_by points at
the other. Nothing is deleted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.db.resources import load_sql
from app.db.runtime import Connection
from app.prompts import contradiction as contradiction_prompt
from app.providers.embedder import Vectors
from app.providers.llm import LLMError
from app.services.contradiction_rules import offline_contradiction
from app.services.runtime import Elephant
from app.services.usage import record_usage


@dataclass(frozen=True)
class StoredFact:
    id: str
    text: str
    subject: str | None
    valid_from: datetime | None
    embedding: Vectors


def check(elephant: Elephant, conn: Connection, tenant: str, fact: StoredFact) -> int:
    """Compare with similar facts of the same subject; close the older on conflict."""
    if not fact.subject:
        return 0
    settings = elephant.settings.contradiction
    candidates = conn.execute(
        load_sql("similar_facts.sql"),
        {
            "subject": fact.subject,
            "embedding": fact.embedding,
            "exclude": fact.id,
            "k": settings.candidates,
        },
    ).fetchall()
    found = 0
    for other_id, other_text, other_from, _recorded, similarity in candidates:
        if similarity < settings.min_similarity:
            continue
        verdict = _judge(elephant, conn, tenant, fact.subject, other_text, fact.text)
        if verdict is None:
            continue
        contradicts, score, reason, detector = verdict
        if not contradicts:
            continue
        older, newer = str(other_id), fact.id
        if other_from is not None and fact.valid_from is not None and fact.valid_from < other_from:
            older, newer = fact.id, str(other_id)  # the new fact describes an earlier time
        _close(conn, tenant, older, newer, detector, score, reason)
        found += 1
        if older == fact.id:
            break  # the new fact itself is closed; it supersedes nothing further
    return found


def _judge(
    elephant: Elephant, conn: Connection, tenant: str, subject: str, older: str, newer: str
) -> tuple[bool, float, str, str] | None:
    llm = elephant.llm
    if llm is not None:
        try:
            result = llm.complete_json(
                system=contradiction_prompt.SYSTEM,
                prompt=contradiction_prompt.build_prompt(subject, older, newer),
                schema=contradiction_prompt.ContradictionAnswer,
                max_tokens=300,
            )
        except LLMError as exc:
            record_usage(conn, tenant, "contradiction", exc.usage, ok=False, error=exc.message)
        else:
            record_usage(conn, tenant, "contradiction", result.usage, ok=True)
            answer = result.value
            return answer.contradicts, answer.confidence, answer.reason, elephant.scorer_name
    verdict = offline_contradiction(subject, older, newer)
    detector = "offline" if llm is None else "offline (llm fallback)"
    return verdict.contradicts, verdict.score, verdict.reason, detector


def _close(
    conn: Connection, tenant: str, older: str, newer: str, detector: str, score: float, reason: str
) -> None:
    inserted = conn.execute(
        "INSERT INTO contradictions (tenant_id, older_fact_id, newer_fact_id, detector, score, "
        "reason) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING id",
        (tenant, older, newer, detector, score, reason),
    ).fetchone()
    if inserted is None:
        return
    conn.execute(
        "UPDATE facts AS old SET status = 'superseded', superseded_by = new.id, "
        "expired_at = greatest(now(), old.recorded_at), "
        "valid_to = greatest(coalesce(new.valid_from, now()), coalesce(old.valid_from, "
        "'-infinity')) "
        "FROM facts AS new WHERE old.id = %s AND new.id = %s AND old.status = 'active'",
        (older, newer),
    )


def recent(elephant: Elephant, tenant: str, limit: int) -> list[dict[str, Any]]:
    with elephant.db.tenant(tenant) as conn:
        return list_contradictions(conn, limit)


def list_contradictions(conn: Connection, limit: int) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT c.id, c.detector, c.score, c.reason, c.created_at, "
        "o.id, o.text, o.valid_from, o.valid_to, o.status, "
        "n.id, n.text, n.valid_from, n.status "
        "FROM contradictions c JOIN facts o ON o.id = c.older_fact_id "
        "JOIN facts n ON n.id = c.newer_fact_id ORDER BY c.id DESC LIMIT %s",
        (limit,),
    ).fetchall()
    return [
        {
            "id": row[0],
            "detector": row[1],
            "score": round(float(row[2]), 3),
            "reason": row[3],
            "created_at": row[4],
            "older": {
                "id": str(row[5]),
                "text": row[6],
                "valid_from": row[7],
                "valid_to": row[8],
                "status": row[9],
            },
            "newer": {
                "id": str(row[10]),
                "text": row[11],
                "valid_from": row[12],
                "status": row[13],
            },
        }
        for row in rows
    ]
