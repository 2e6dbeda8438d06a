"""LLM token usage, one row per call, so cost is auditable per tenant and operation."""

from __future__ import annotations

from app.db.resources import load_sql
from app.db.runtime import Connection
from app.providers.llm import LLMUsage
from app.services.ops import metrics


def record_usage(
    conn: Connection,
    tenant: str,
    operation: str,
    usage: LLMUsage | None,
    *,
    ok: bool,
    error: str | None = None,
) -> None:
    if usage is None:
        return
    metrics.record_llm(operation, usage, ok=ok)
    conn.execute(
        load_sql("ops/record_llm_usage.sql"),
        (
            tenant,
            operation,
            usage.provider,
            usage.model,
            usage.tokens_in,
            usage.tokens_out,
            usage.latency_ms,
            usage.attempts,
            ok,
            error,
        ),
    )
