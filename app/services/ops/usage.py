"""LLM token usage, one row per call, so cost is auditable per tenant and operation.

``complete_recorded`` is the one way a service asks the LLM inside a tenant
transaction: the call's usage is recorded whether it answered or failed.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from app.db.resources import load_sql
from app.db.runtime import Connection
from app.providers.llm import LLM, LLMError, LLMResult, LLMUsage
from app.services.ops import metrics

T = TypeVar("T", bound=BaseModel)


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


def complete_recorded(
    llm: LLM,
    conn: Connection,
    tenant: str,
    operation: str,
    *,
    system: str,
    prompt: str,
    schema: type[T],
    max_tokens: int,
) -> LLMResult[T]:
    """``llm.complete_json``'s result, its usage recorded under ``operation``; on LLMError
    the failed call's usage and message are recorded and the error raised again (the
    caller falls back)."""
    try:
        result = llm.complete_json(
            system=system, prompt=prompt, schema=schema, max_tokens=max_tokens
        )
    except LLMError as exc:
        record_usage(conn, tenant, operation, exc.usage, ok=False, error=exc.message)
        raise
    record_usage(conn, tenant, operation, result.usage, ok=True)
    return result
