"""The gate's decisions, newest first, and admitting a rejected note after all.

Every text the A-MAC gate judged has a row in admission_log (app/services/gate/admit.py):
its three scores, the composite against the threshold then in force, the reason and
the scorer. A rejected text is kept whole in ``rejected_text`` so that a person who
disagrees with the gate can admit it: the note is committed again through the
ordinary commit path with ``force`` (so it is embedded, deduplicated, logged as a
'forced' decision naming the rejected one, and its facts are extracted), and the
rejected row's text is cleared, so it cannot be admitted twice.

What a rejected note loses: the log keeps its text, source and kind only, not the
importance, metadata, occurred_at or subject the caller sent, so the admitted memory
gets the defaults (importance 50, no metadata, no event date, the tenant's owner as
"I" at admission time). A rejected conversation window is not admitted on its own:
its turns, and the facts extracted from them, are kept whatever the gate decided, and
the transcript shows the window (GET /conversations/{id}).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from app.errors import Conflict, InvalidInput, NotFound
from app.services.common import paging
from app.services.gate.admit import Decision, GateVerdict
from app.services.memory.commit import CommitStatus, NoteIn, commit_note
from app.services.runtime import Elephant

LISTING = "decisions"
DECISIONS: tuple[Decision, ...] = ("accepted", "rejected", "forced", "duplicate")
KINDS = ("note", "window")


@dataclass(frozen=True, slots=True)
class GateDecision:
    """One row of the gate's log. ``memory_id``: the memory stored (accepted, forced) or
    matched (duplicate). ``rejected_text``: the whole text of a rejected note or window,
    until it is admitted or erased. ``admittable``: POST /amac/decisions/{id}/admit would
    store it."""

    id: int
    decision: Decision
    kind: str
    source: str
    memory_id: str | None
    text_preview: str
    relevance: float | None
    novelty: float | None
    specificity: float | None
    composite: float | None
    threshold: float | None
    reason: str
    scorer: str
    created_at: datetime
    rejected_text: str | None
    admittable: bool
    conversation_id: str | None = None  # a window's conversation and turns (migration 0011)
    turn_start: int | None = None
    turn_end: int | None = None


@dataclass(frozen=True, slots=True)
class DecisionPage:
    """Decisions newest first; ``next_cursor`` continues (None: the last page); ``total``
    counts every decision the filter matches."""

    items: list[GateDecision]
    total: int
    limit: int
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class Admission:
    """A rejected decision admitted: ``memory_id`` is the memory now holding its text
    (``status`` stored, or duplicate when the same text had been stored since), and
    ``admission_id`` the new decision row (forced, or duplicate), whose reason names
    ``decision_id``."""

    decision_id: int
    admission_id: int | None
    memory_id: str | None
    status: CommitStatus
    gate: GateVerdict
    job_id: int | None


_COLUMNS = """
    id, decision, kind, source, memory_id::text, text_preview, relevance, novelty,
    specificity, composite, threshold, reason, scorer, created_at, rejected_text,
    conversation_id::text, turn_start, turn_end"""
_ROW_FIELDS = [f.name for f in fields(GateDecision) if f.name != "admittable"]  # _COLUMNS
_FILTER = """
    WHERE tenant_id = %(tenant)s
      AND (%(decision)s::text IS NULL OR decision = %(decision)s)
      AND (%(kind)s::text IS NULL OR kind = %(kind)s)"""


def _decision(row: tuple[Any, ...]) -> GateDecision:
    values = dict(zip(_ROW_FIELDS, row, strict=True))
    for score in ("relevance", "novelty", "specificity", "composite", "threshold"):
        values[score] = None if values[score] is None else round(float(values[score]), 3)
    admittable = (
        values["decision"] == "rejected"
        and values["kind"] == "note"
        and values["rejected_text"] is not None
    )
    return GateDecision(**values, admittable=admittable)


def _check_choice(name: str, value: str | None, allowed: tuple[str, ...]) -> None:
    if value is not None and value not in allowed:
        raise InvalidInput(
            f"{name} must be one of {', '.join(allowed)}, got {value!r}",
            details={"fields": [{"key": name, "message": f"one of {', '.join(allowed)}"}]},
        )


def list_decisions(
    elephant: Elephant,
    tenant: str,
    *,
    decision: str | None = None,
    kind: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> DecisionPage:
    """One page, newest first (by id), after the cursor's decision when there is one."""
    paging.check_limit(limit)
    _check_choice("decision", decision, DECISIONS)
    _check_choice("kind", kind, KINDS)
    before = paging.decode(LISTING, cursor, (int,))[0] if cursor is not None else None
    params = {
        "tenant": tenant,
        "decision": decision,
        "kind": kind,
        "before": before,
        "limit": limit + 1,
    }
    with elephant.db.reading(tenant) as conn:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM admission_log {_FILTER} "
            "AND (%(before)s::bigint IS NULL OR id < %(before)s) "
            "ORDER BY id DESC LIMIT %(limit)s",
            params,
        ).fetchall()
        counted = conn.execute(f"SELECT count(*) FROM admission_log {_FILTER}", params).fetchone()
    items = [_decision(row) for row in rows[:limit]]
    following = paging.encode(LISTING, (items[-1].id,)) if len(rows) > limit else None
    return DecisionPage(items, int(counted[0]) if counted else 0, limit, following)


def decisions_for_memory(elephant: Elephant, tenant: str, memory_id: str) -> list[GateDecision]:
    """The decisions that stored a memory or matched it as a duplicate, oldest first."""
    with elephant.db.reading(tenant) as conn:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM admission_log WHERE tenant_id = %s AND memory_id = %s "
            "ORDER BY id",
            (tenant, memory_id),
        ).fetchall()
    return [_decision(row) for row in rows]


def admit(
    elephant: Elephant, tenant: str, decision_id: int, *, actor: str | None = None
) -> Admission:
    """Store a rejected note after all (force), once: 404 unknown decision, 422 not a
    rejected note, 409 already admitted (or its text erased, or logged before texts
    were kept).

    The text is claimed first (cleared in its own transaction, so a second admission
    running at the same time finds nothing to admit), then committed; should the commit
    fail, the text is put back and the error is raised."""
    claimed = _claim(elephant, tenant, decision_id)
    text, source = claimed
    try:
        result = commit_note(elephant, tenant, NoteIn(text=text, source=source, force=True))
    except Exception:
        with elephant.db.tenant(tenant) as conn:
            conn.execute(
                "UPDATE admission_log SET rejected_text = %s "
                "WHERE tenant_id = %s AND id = %s AND rejected_text IS NULL",
                (text, tenant, decision_id),
            )
        raise
    by = f" by key {actor}" if actor else ""
    with elephant.db.tenant(tenant) as conn:
        row = conn.execute(
            "UPDATE admission_log SET reason = %(note)s || reason "
            "WHERE tenant_id = %(tenant)s AND id = ("
            "  SELECT id FROM admission_log WHERE tenant_id = %(tenant)s"
            "  AND memory_id = %(memory)s AND id > %(decision)s"
            "  AND decision IN ('forced', 'duplicate') ORDER BY id DESC LIMIT 1"
            ") RETURNING id",
            {
                "note": f"admitted from rejected decision {decision_id}{by}; ",
                "tenant": tenant,
                "memory": result.memory_id,
                "decision": decision_id,
            },
        ).fetchone()
    return Admission(
        decision_id=decision_id,
        admission_id=None if row is None else int(row[0]),
        memory_id=result.memory_id,
        status=result.status,
        gate=result.gate.rounded(),
        job_id=result.job_id,
    )


def _claim(elephant: Elephant, tenant: str, decision_id: int) -> tuple[str, str]:
    """(text, source) of an admittable rejected note, its rejected_text cleared."""
    with elephant.db.tenant(tenant) as conn:
        row = conn.execute(
            "SELECT decision, kind, source, rejected_text FROM admission_log "
            "WHERE tenant_id = %s AND id = %s FOR UPDATE",
            (tenant, decision_id),
        ).fetchone()
        if row is None:
            raise NotFound(f"no gate decision with id {decision_id} in this tenant")
        decision, kind, source, text = row
        if decision != "rejected":
            raise InvalidInput(
                f"decision {decision_id} was {decision}, not rejected: only a rejected note "
                "can be admitted"
            )
        if kind != "note":
            raise InvalidInput(
                f"decision {decision_id} rejected a conversation window: a window is not "
                "admitted on its own (its turns, and the facts extracted from them, are kept "
                "whatever the gate decided; GET /conversations/{id} shows it)"
            )
        if text is None:
            raise Conflict(
                f"decision {decision_id} has no text left to admit: it was admitted already "
                "(see the forced decision naming it), erased, or logged before rejected "
                "texts were kept"
            )
        conn.execute(
            "UPDATE admission_log SET rejected_text = NULL WHERE tenant_id = %s AND id = %s",
            (tenant, decision_id),
        )
    return str(text), str(source)
