"""Reflect: search, then an LLM answers from the numbered sources, citing them as [n].

Each question is routed (factual / temporal / inference) by a small rule-based
classifier, so the prompt fits the kind of reasoning needed and the choice is
testable. Without an LLM (or when it fails) reflect still returns the sources,
with a note saying why there is no synthesised answer.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import msgspec
from msgspec import UNSET, UnsetType
from pydantic import BaseModel, ConfigDict, Field

from app.db.replicas import Consistency
from app.prompts import reflect as reflect_prompt
from app.prompts.reflect import Route
from app.providers.llm import LLMError
from app.services.common.inputs import NonBlank
from app.services.ops.usage import complete_recorded
from app.services.retrieval.schemas import SearchFilters, SearchHit, SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant

_TEMPORAL = re.compile(
    r"\b(when|what (?:date|day|month|year|time)|how long|how many (?:days|weeks|months|years)"
    r"|since|until|before|after|ago|first time|last time|which (?:year|month|day)"
    r"|in (?:january|february|march|april|may|june|july|august|september|october|november"
    r"|december|\d{4}))\b",
    re.IGNORECASE,
)
_INFERENCE = re.compile(
    r"\b(would|might|likely|probably|could|should|why|what kind of|what type of person"
    r"|do you think|considered|be considered|guess|infer|suggest)\b",
    re.IGNORECASE,
)


def classify(question: str) -> Route:
    """inference beats temporal beats factual: 'Would X still ... after Y?' needs inference."""
    if _INFERENCE.search(question):
        return "inference"
    if _TEMPORAL.search(question):
        return "temporal"
    return "factual"


class ReflectIn(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    query: NonBlank = Field(max_length=4000, description="The question.")
    limit: int | None = Field(None, ge=1, le=60, description="Sources to use (reflect.limit).")
    filters: SearchFilters = Field(default_factory=SearchFilters)
    consistency: Consistency = Field(
        "replica",
        description="Where the sources are searched: replica (may lag the primary) or "
        "primary (sees every committed write).",
    )


@dataclass(frozen=True, slots=True)
class ReflectSource:
    """A numbered source the answer may cite as [n]; ``date``: its event (else commit) day."""

    n: int
    id: str
    kind: str
    date: str
    source: str | None
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class ReflectUsage:
    tokens_in: int
    tokens_out: int
    latency_ms: float


class Reflection(msgspec.Struct, frozen=True, kw_only=True):
    """The answer with its citations and sources. Without an answer from the LLM (none
    configured, none reachable, nothing found) ``note`` says why."""

    question: str
    route: Route
    answer: str | None
    citations: list[int]
    sources: list[ReflectSource]
    search_elapsed_ms: float
    reflect_model: str | None
    usage: ReflectUsage | None
    note: str | UnsetType = UNSET


def _source(number: int, hit: SearchHit) -> ReflectSource:
    when = hit.event_at or hit.created_at
    return ReflectSource(
        n=number,
        id=hit.id,
        kind=hit.kind,
        date=when.date().isoformat(),
        source=hit.source,
        text=hit.text,
        score=round(hit.score, 6),
    )


def context_block(sources: list[ReflectSource], max_chars: int) -> tuple[str, int]:
    """'[n] (date, source) text' lines, as many whole sources as fit; returns (block, count)."""
    lines: list[str] = []
    used = 0
    for source in sources:
        line = f"[{source.n}] ({source.date}, {source.source}) {source.text}"
        if lines and used + len(line) > max_chars:
            break
        lines.append(line[:max_chars])
        used += len(line)
    return "\n".join(lines), len(lines)


def reflect(elephant: Elephant, tenant: str, request: ReflectIn) -> Reflection:
    route = classify(request.query)
    started = time.perf_counter()
    found = search(
        elephant,
        tenant,
        SearchRequest(
            query=request.query,
            limit=request.limit or elephant.settings.reflect.limit,
            filters=request.filters,
            consistency=request.consistency,
        ),
    )
    search_ms = round((time.perf_counter() - started) * 1000, 2)
    sources = [_source(n, hit) for n, hit in enumerate(found.hits, start=1)]
    block, shown = context_block(sources, elephant.settings.reflect.max_context_chars)
    sources = sources[:shown]
    result = Reflection(
        question=request.query,
        route=route,
        answer=None,
        citations=[],
        sources=sources,
        search_elapsed_ms=search_ms,
        reflect_model=None,
        usage=None,
    )
    llm = elephant.llm
    if llm is None:
        return msgspec.structs.replace(
            result,
            note="no LLM configured: returning the top sources without a synthesised answer",
        )
    if not sources:
        return msgspec.structs.replace(
            result,
            answer="Nothing in memory matches this question.",
            note="no sources found; the LLM was not called",
        )
    with elephant.db.tenant(tenant) as conn:
        try:
            reply = complete_recorded(
                llm,
                conn,
                tenant,
                "reflect",
                system=reflect_prompt.SYSTEM[route],
                prompt=reflect_prompt.build_prompt(request.query, block),
                schema=reflect_prompt.Answer,
                max_tokens=800,
            )
        except LLMError as exc:
            return msgspec.structs.replace(
                result, note=f"LLM unavailable ({exc.message}): returning the top sources"
            )
    valid = {source.n for source in sources}
    cited = [n for n in dict.fromkeys(reply.value.citations) if n in valid]
    cited += [
        int(n)
        for n in re.findall(r"\[(\d+)\]", reply.value.answer)
        if int(n) in valid and int(n) not in cited
    ]
    return msgspec.structs.replace(
        result,
        answer=reply.value.answer,
        citations=cited,
        reflect_model=f"{llm.provider}:{llm.model}",
        usage=ReflectUsage(
            tokens_in=reply.usage.tokens_in,
            tokens_out=reply.usage.tokens_out,
            latency_ms=round(reply.usage.latency_ms, 2),
        ),
    )
