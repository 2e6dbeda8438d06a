"""Reading the A-MAC gate's audit trail, and the per-tenant threshold."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.db.resources import load_sql
from app.services.gate.admit import GateThreshold, tenant_threshold
from app.services.runtime import Elephant


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
    """A rejected memory as the admission log recorded it."""

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


def _mean(value: Any) -> float | None:
    return None if value is None else round(float(value), 3)


def metrics(elephant: Elephant, tenant: str, recent: int = 20) -> GateMetrics:
    with elephant.db.tenant(tenant) as conn:
        cursor = conn.execute(load_sql("admission_metrics.sql"), {"tenant": tenant})
        names = [column.name for column in cursor.description or []]
        row = cursor.fetchone()
        assert row is not None
        summary = dict(zip(names, row, strict=True))
        rejections = conn.execute(
            "SELECT id, memory_id, kind, source, text_preview, relevance, novelty, specificity, "
            "composite, threshold, reason, scorer, created_at FROM admission_log "
            "WHERE tenant_id = %s AND decision = 'rejected' ORDER BY id DESC LIMIT %s",
            (tenant, recent),
        ).fetchall()
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
        recent_rejections=[
            Rejection(
                id=r[0],
                memory_id=None if r[1] is None else str(r[1]),
                kind=r[2],
                source=r[3],
                text_preview=r[4],
                relevance=r[5],
                novelty=r[6],
                specificity=r[7],
                composite=r[8],
                threshold=r[9],
                reason=r[10],
                scorer=r[11],
                created_at=r[12],
            )
            for r in rejections
        ],
        empty=counts.total == 0,
    )


def set_threshold(elephant: Elephant, tenant: str, threshold: float | None) -> GateThreshold:
    """Override (or with None, clear) this tenant's gate threshold; returns the one in force."""
    with elephant.db.tenant(tenant) as conn:
        if threshold is None:
            conn.execute(
                "UPDATE tenants SET settings = settings - 'gate_threshold' WHERE id = %s", (tenant,)
            )
        else:
            conn.execute(
                "UPDATE tenants SET settings = settings || %s::jsonb WHERE id = %s",
                (json.dumps({"gate_threshold": threshold}), tenant),
            )
        return GateThreshold(threshold=tenant_threshold(conn, elephant, tenant))
