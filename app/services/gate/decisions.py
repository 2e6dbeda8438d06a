"""The gate's trail: its decisions read back, its metrics, and admitting a rejected note.

Every text the A-MAC gate judged has a row in admission_log (app/services/gate/admit.py
writes it): its three scores, the composite against the threshold then in force, the
reason and the scorer. This module is the one reader of those rows: one column list
(sql/gate/decision_columns.sql) and one row reader (``_read``) serve the decisions
page (GET /amac/decisions), a memory's decisions, and the recent rejections of the
gate metrics (GET /amac/metrics, whose ``Rejection`` is a projection of a decision).

A rejected text is kept whole in ``rejected_text`` so that a person who
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

from app.db.resources import load_sql, load_statement
from app.db.runtime import Connection
from app.errors import Conflict, InvalidInput, NotFound
from app.services.common import paging
from app.services.gate.admit import Decision, GateVerdict, tenant_threshold
from app.services.memory.commit import commit_note
from app.services.memory.schemas import CommitStatus, NoteIn
from app.services.runtime import Elephant

LISTING = "decisions"
DECISIONS: tuple[Decision, ...] = ("accepted", "rejected", "forced", "duplicate")
KINDS = ("note", "window")
_SCORES = ("relevance", "novelty", "specificity", "composite", "threshold")


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


@dataclass(frozen=True, slots=True)
class GateCounts:
    """Decisions by kind; ``llm_fallbacks``: scored offline because the LLM failed."""

    total: int
    accepted: int
    rejected: int
    forced: int
    duplicate: int
    llm_fallbacks: int


@dataclass(frozen=True, slots=True)
class MeanScores:
    relevance: float | None
    novelty: float | None
    specificity: float | None
    composite: float | None


@dataclass(frozen=True, slots=True)
class Rejection:
    """A rejected memory as the admission log recorded it: a projection of its
    GateDecision (``of``), kept as its own type because GET /amac/metrics has always
    shown these fields, in this order, with the scores as stored (not rounded)."""

    id: int
    memory_id: str | None
    kind: str
    source: str
    text_preview: str
    relevance: float | None
    novelty: float | None
    specificity: float | None
    composite: float | None
    threshold: float | None
    reason: str
    scorer: str
    created_at: datetime

    @classmethod
    def of(cls, decision: GateDecision) -> Rejection:
        """The rejection a decision read unrounded (``_read(..., rounded=False)``) shows."""
        return cls(**{name: getattr(decision, name) for name in _REJECTION_FIELDS})


_REJECTION_FIELDS = [f.name for f in fields(Rejection)]


@dataclass(frozen=True, slots=True)
class GateMetrics:
    """``composite_histogram``: decisions per whole composite point ("0" to "9")."""

    threshold: float
    counts: GateCounts
    accept_rate: float | None
    mean_scores: MeanScores
    composite_histogram: dict[str, int]
    recent_rejections: list[Rejection]
    empty: bool


# the columns of sql/gate/decision_columns.sql, in its order
_ROW_FIELDS = [f.name for f in fields(GateDecision) if f.name != "admittable"]
# the named parameters of sql/gate/*.sql: tenant, decision, kind, before, limit, memory
DecisionParams = dict[str, str | int | None]


def _read(
    conn: Connection, statement: str, params: DecisionParams, *, rounded: bool = True
) -> list[GateDecision]:
    """The gate's log rows a statement selects (its columns: decision_columns.sql), as
    decisions; ``rounded``: the scores to 3 decimals, as the decisions page shows them."""
    decisions = []
    for row in conn.execute(load_statement(statement), params).fetchall():
        values = dict(zip(_ROW_FIELDS, row, strict=True))
        if rounded:
            for score in _SCORES:
                values[score] = None if values[score] is None else round(float(values[score]), 3)
        admittable = (
            values["decision"] == "rejected"
            and values["kind"] == "note"
            and values["rejected_text"] is not None
        )
        decisions.append(GateDecision(**values, admittable=admittable))
    return decisions


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
    before = paging.before_id(LISTING, cursor)
    params: DecisionParams = {
        "tenant": tenant,
        "decision": decision,
        "kind": kind,
        "before": before,
        "limit": limit + 1,
    }
    with elephant.db.reading(tenant) as conn:
        found = _read(conn, "gate/decisions_page.sql", params)
        counted = conn.execute(load_statement("gate/decisions_count.sql"), params).fetchone()
    items = found[:limit]
    following = paging.encode(LISTING, (items[-1].id,)) if len(found) > limit else None
    return DecisionPage(items, int(counted[0]) if counted else 0, limit, following)


def decisions_for_memory(elephant: Elephant, tenant: str, memory_id: str) -> list[GateDecision]:
    """The decisions that stored a memory or matched it as a duplicate, oldest first."""
    with elephant.db.reading(tenant) as conn:
        return _read(conn, "gate/memory_decisions.sql", {"tenant": tenant, "memory": memory_id})


def _mean(value: float | None) -> float | None:
    return None if value is None else round(float(value), 3)


def metrics(elephant: Elephant, tenant: str, recent: int = 20) -> GateMetrics:
    """Counts, mean scores and the composite histogram of every decision, the threshold
    in force, and the ``recent`` newest rejections."""
    with elephant.db.tenant(tenant) as conn:
        cursor = conn.execute(load_sql("gate/admission_metrics.sql"), {"tenant": tenant})
        names = [column.name for column in cursor.description or []]
        row = cursor.fetchone()
        assert row is not None
        summary = dict(zip(names, row, strict=True))
        rejected = _read(
            conn,
            "gate/decisions_page.sql",
            {
                "tenant": tenant,
                "decision": "rejected",
                "kind": None,
                "before": None,
                "limit": recent,
            },
            rounded=False,
        )
        threshold = tenant_threshold(conn, elephant, tenant)
    counts = GateCounts(
        total=int(summary["total"]),
        accepted=int(summary["accepted"]),
        rejected=int(summary["rejected"]),
        forced=int(summary["forced"]),
        duplicate=int(summary["duplicate"]),
        llm_fallbacks=int(summary["llm_fallbacks"]),
    )
    judged = counts.accepted + counts.rejected
    return GateMetrics(
        threshold=threshold,
        counts=counts,
        accept_rate=round(counts.accepted / judged, 4) if judged else None,
        mean_scores=MeanScores(
            relevance=_mean(summary["mean_relevance"]),
            novelty=_mean(summary["mean_novelty"]),
            specificity=_mean(summary["mean_specificity"]),
            composite=_mean(summary["mean_composite"]),
        ),
        composite_histogram=summary["composite_histogram"],
        recent_rejections=[Rejection.of(decision) for decision in rejected],
        empty=counts.total == 0,
    )


def admit(
    elephant: Elephant, tenant: str, decision_id: int, *, actor: str | None = None
) -> Admission:
    """Store a rejected note after all (force), once: 404 unknown decision, 422 not a
    rejected note, 409 already admitted (or its text erased, or logged before texts
    were kept).

    The text is claimed first (cleared in its own transaction, so a second admission
    running at the same time finds nothing to admit), then committed; should the commit
    fail, the text is put back and the error is raised."""
    text, source = _claim(elephant, tenant, decision_id)
    try:
        result = commit_note(elephant, tenant, NoteIn(text=text, source=source, force=True))
    except Exception:
        with elephant.db.tenant(tenant) as conn:
            conn.execute(
                load_sql("gate/restore_rejected_text.sql"),
                {"tenant": tenant, "decision": decision_id, "text": text},
            )
        raise
    by = f" by key {actor}" if actor else ""
    with elephant.db.tenant(tenant) as conn:
        row = conn.execute(
            load_sql("gate/admitted_reason.sql"),
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
            load_sql("gate/claim_rejected.sql"), {"tenant": tenant, "decision": decision_id}
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
