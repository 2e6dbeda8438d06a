"""Reading the A-MAC gate's audit trail, and the per-tenant threshold."""

from __future__ import annotations

import json
from typing import Any

from app.db.resources import load_sql
from app.services.gate import tenant_threshold
from app.services.runtime import Elephant


def metrics(elephant: Elephant, tenant: str, recent: int = 20) -> dict[str, Any]:
    with elephant.db.tenant(tenant) as conn:
        cursor = conn.execute(load_sql("admission_metrics.sql"))
        names = [column.name for column in cursor.description or []]
        row = cursor.fetchone()
        assert row is not None
        summary = dict(zip(names, row, strict=True))
        rejections = conn.execute(
            "SELECT id, memory_id, kind, source, text_preview, relevance, novelty, specificity, "
            "composite, threshold, reason, scorer, created_at FROM admission_log "
            "WHERE decision = 'rejected' ORDER BY id DESC LIMIT %s",
            (recent,),
        )
        keys = [column.name for column in rejections.description or []]
        recent_rejections = [dict(zip(keys, r, strict=True)) for r in rejections.fetchall()]
        threshold = tenant_threshold(conn, elephant, tenant)
    total = int(summary["total"])
    judged = int(summary["accepted"]) + int(summary["rejected"])
    means = {
        key.removeprefix("mean_"): None if summary[key] is None else round(float(summary[key]), 3)
        for key in ("mean_relevance", "mean_novelty", "mean_specificity", "mean_composite")
    }
    return {
        "threshold": threshold,
        "counts": {
            key: int(summary[key])
            for key in ("total", "accepted", "rejected", "forced", "duplicate", "llm_fallbacks")
        },
        "accept_rate": round(int(summary["accepted"]) / judged, 4) if judged else None,
        "mean_scores": means,
        "composite_histogram": summary["composite_histogram"],
        "recent_rejections": recent_rejections,
        "empty": total == 0,
    }


def set_threshold(elephant: Elephant, tenant: str, threshold: float | None) -> float:
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
        return tenant_threshold(conn, elephant, tenant)
