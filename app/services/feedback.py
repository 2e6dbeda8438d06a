"""Feedback: a helpful memory or fact gains importance (+5), an unhelpful one loses 10."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, model_validator

from app.errors import NotFound
from app.services.runtime import Elephant

HELPFUL_DELTA = 5.0
UNHELPFUL_DELTA = -10.0


class FeedbackIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    memory_id: UUID | None = None
    fact_id: UUID | None = None
    helpful: bool

    @model_validator(mode="after")
    def _one_target(self) -> FeedbackIn:
        if (self.memory_id is None) == (self.fact_id is None):
            raise ValueError("give exactly one of memory_id or fact_id")
        return self


def give_feedback(elephant: Elephant, tenant: str, feedback: FeedbackIn) -> dict[str, Any]:
    delta = HELPFUL_DELTA if feedback.helpful else UNHELPFUL_DELTA
    table, target = (
        ("memories", feedback.memory_id) if feedback.memory_id else ("facts", feedback.fact_id)
    )
    with elephant.db.tenant(tenant) as conn:
        row = conn.execute(
            f"UPDATE {table} SET importance = least(100, greatest(0, importance + %s)) "
            "WHERE id = %s RETURNING importance",
            (delta, target),
        ).fetchone()
        if row is None:
            kind = "memory" if table == "memories" else "fact"
            raise NotFound(f"no {kind} with id {target} in this tenant")
        importance = float(row[0])
        conn.execute(
            "INSERT INTO feedback (tenant_id, memory_id, fact_id, helpful, delta, "
            "importance_after) VALUES (%s, %s, %s, %s, %s, %s)",
            (tenant, feedback.memory_id, feedback.fact_id, feedback.helpful, delta, importance),
        )
    return {
        "memory_id": str(feedback.memory_id) if feedback.memory_id else None,
        "fact_id": str(feedback.fact_id) if feedback.fact_id else None,
        "delta": delta,
        "importance": importance,
    }
