"""Proactive recall: memories relevant to the conversation that it does not already hold.

Searches with the latest messages, then drops what the messages already contain
(most of a hit's words appear in them) and what was accessed recently (it was
just surfaced), so repeated calls do not suggest the same thing twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.services.common.inputs import Text
from app.services.common.text import tokens
from app.services.retrieval.schemas import SearchHit, SearchHitView, SearchRequest
from app.services.retrieval.search import record_hits, search
from app.services.runtime import Elephant

CONTAINED_SHARE = 0.8
MESSAGES_IN_QUERY = 3


class ProactiveIn(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    messages: list[Text] = Field(min_length=1, max_length=100)
    max_results: int = Field(5, ge=1, le=50)

    @field_validator("messages")
    @classmethod
    def _something_said(cls, messages: list[str]) -> list[str]:
        """Blank messages are allowed (a turn may carry only a tool call), but the search
        needs words from at least one."""
        if not any(message.strip() for message in messages):
            raise ValueError("at least one message must contain text")
        return messages


@dataclass(frozen=True, slots=True)
class Skipped:
    """Hits left out: the conversation already says them, or they were just surfaced."""

    already_in_conversation: int
    recently_accessed: int


@dataclass(frozen=True, slots=True)
class Suggestions:
    query: str
    suggestions: list[SearchHitView]
    skipped: Skipped


def proactive(elephant: Elephant, tenant: str, request: ProactiveIn) -> Suggestions:
    recent = [m for m in request.messages if m][-MESSAGES_IN_QUERY:]
    query = "\n".join(recent)[-4000:].strip()
    found = search(
        elephant,
        tenant,
        SearchRequest(query=query, limit=min(200, request.max_results * 4)),
        record_access=False,
    )
    said = tokens(" ".join(request.messages))
    ids = [hit.id for hit in found.hits]
    last_access = _last_access(elephant, tenant, ids)
    cutoff = datetime.now(UTC) - timedelta(
        minutes=elephant.settings.search.recently_accessed_minutes
    )
    suggestions: list[SearchHit] = []
    contained = recently_accessed = 0
    for hit in found.hits:
        words = tokens(hit.text)
        if words and len(words & said) / len(words) >= CONTAINED_SHARE:
            contained += 1
            continue
        accessed = last_access.get(hit.id)
        if accessed is not None and accessed > cutoff:
            recently_accessed += 1
            continue
        suggestions.append(hit)
        if len(suggestions) == request.max_results:
            break
    record_hits(elephant, tenant, suggestions)
    return Suggestions(
        query=query,
        suggestions=[hit.view(explain=False) for hit in suggestions],
        skipped=Skipped(already_in_conversation=contained, recently_accessed=recently_accessed),
    )


def _last_access(elephant: Elephant, tenant: str, ids: list[str]) -> dict[str, datetime]:
    if not ids:
        return {}
    with elephant.db.tenant(tenant) as conn:
        rows = conn.execute(
            "SELECT item_id::text, last_accessed_at FROM access_stats "
            "WHERE tenant_id = %s AND item_id = ANY(%s::uuid[]) AND last_accessed_at IS NOT NULL",
            (tenant, ids),
        ).fetchall()
    return {str(row[0]): row[1] for row in rows}
