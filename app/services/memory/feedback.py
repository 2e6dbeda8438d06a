"""Feedback: a helpful memory or fact gains importance (+5), an unhelpful one loses 10.

Importance stays within 0-100; every feedback is a row of the feedback table. Helpful
feedback is also a use: it refreshes the row's activation (access_stats; see
app/services/lifecycle/activation.py) and wakes it if it was dormant; unhelpful
feedback only lowers importance, so the row decays faster. REST
names the target (memory_id or fact_id); MCP passes the one id search returned, which
``give_feedback_on`` looks up as a memory, then as a fact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from uuid import UUID

from psycopg import sql
from pydantic import BaseModel, ConfigDict, model_validator

from app.db.resources import load_sql
from app.db.runtime import Connection
from app.errors import InvalidInput, NotFound
from app.services.retrieval.access_stats import record_use
from app.services.runtime import Elephant

HELPFUL_DELTA = 5.0
UNHELPFUL_DELTA = -10.0

TargetKind = Literal["memory", "fact"]
_TABLES: dict[TargetKind, str] = {"memory": "memories", "fact": "facts"}


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

    @property
    def target(self) -> tuple[TargetKind, UUID]:
        if self.memory_id is not None:
            return "memory", self.memory_id
        if self.fact_id is not None:
            return "fact", self.fact_id
        raise InvalidInput("give exactly one of memory_id or fact_id")  # a model_construct()


@dataclass(frozen=True, slots=True)
class FeedbackResult:
    """What the feedback changed: the target (one id set) and its importance now."""

    memory_id: str | None
    fact_id: str | None
    delta: float
    importance: float


def give_feedback(elephant: Elephant, tenant: str, feedback: FeedbackIn) -> FeedbackResult:
    """Feedback on the memory or fact ``feedback`` names; NotFound if this tenant has none."""
    kind, target = feedback.target
    with elephant.db.tenant(tenant) as conn:
        result = _apply(conn, tenant, kind, target, feedback.helpful)
    if result is None:
        raise NotFound(f"no {kind} with id {target} in this tenant")
    return result


def give_feedback_on(
    elephant: Elephant, tenant: str, target: UUID, helpful: bool
) -> FeedbackResult:
    """Feedback on the memory with id ``target`` or, when there is none, the fact with it
    (search results carry one id of either kind); NotFound if this tenant has neither."""
    with elephant.db.tenant(tenant) as conn:
        result = _apply(conn, tenant, "memory", target, helpful) or _apply(
            conn, tenant, "fact", target, helpful
        )
    if result is None:
        raise NotFound(f"no memory or fact with id {target} in this tenant")
    return result


def _apply(
    conn: Connection, tenant: str, kind: TargetKind, target: UUID, helpful: bool
) -> FeedbackResult | None:
    """Move the target's importance and record the feedback; None if there is no target."""
    delta = HELPFUL_DELTA if helpful else UNHELPFUL_DELTA
    statement = sql.SQL(load_sql("memory/feedback_importance.sql")).format(
        table=sql.Identifier(_TABLES[kind])
    )
    row = conn.execute(
        statement, {"delta": delta, "helpful": helpful, "tenant": tenant, "id": target}
    ).fetchone()
    if row is None:
        return None
    importance = float(row[0])
    if helpful:  # a use, written now with the feedback (not batched: this is a write)
        record_use(conn, tenant, kind, str(target))
    memory_id, fact_id = (target, None) if kind == "memory" else (None, target)
    conn.execute(
        load_sql("memory/insert_feedback.sql"),
        {
            "tenant": tenant,
            "memory": memory_id,
            "fact": fact_id,
            "helpful": helpful,
            "delta": delta,
            "importance": importance,
        },
    )
    return FeedbackResult(
        memory_id=None if memory_id is None else str(memory_id),
        fact_id=None if fact_id is None else str(fact_id),
        delta=delta,
        importance=importance,
    )
