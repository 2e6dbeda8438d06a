"""The memory and session tools: thin adapters from MCP arguments to app.services.

Results are shaped for an agent's context window: ids, text, dates and scores;
never embeddings, lane ranks or audit details (the REST API has those).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, NotRequired
from uuid import UUID

import msgspec
from pydantic import Field
from typing_extensions import TypedDict

from app.errors import InvalidInput
from app.mcp.context import current
from app.mcp.registry import ToolSet
from app.services.memory import commit, schemas, sessions
from app.services.memory import feedback as feedback_service
from app.services.ops import stats as stats_service
from app.services.retrieval import reflect as reflect_service
from app.services.retrieval import search as search_service
from app.services.retrieval.schemas import SearchFilters, SearchHit, SearchRequest

MEMORY = ToolSet()

Date = Annotated[
    str | None, Field(description="ISO 8601 date or date-time, e.g. 2025-06-01T14:00:00Z.")
]
Turns = Annotated[
    list[schemas.TurnIn],
    Field(min_length=1, description="In order: {speaker, text, timestamp?, id?} each."),
]
Project = Annotated[
    str, Field(min_length=1, max_length=200, description="Project name, e.g. the repository.")
]


def _date(value: Any) -> str | None:
    return None if value is None else value.date().isoformat()


# ------------------------------------------------------------------ results
# What each tool returns: a compact view of the service's typed result, shaped for an
# agent's context window (typed dicts, so the tool's JSON is exactly these keys; from
# typing_extensions, as pydantic asks on Python < 3.12).


class SearchToolHit(TypedDict):
    id: str
    kind: str
    date: str | None
    source: str | None
    score: float  # the ranking score: the results come sorted by it
    text: str
    # a memory whose facts were all superseded: the memories that superseded it
    superseded_by: NotRequired[list[str]]


class SearchToolResult(TypedDict):
    count: int
    results: list[SearchToolHit]


class ReflectToolSource(TypedDict):
    n: int
    id: str
    kind: str
    date: str
    text: str


class ReflectToolResult(TypedDict):
    answer: str | None
    citations: list[int]
    sources: list[ReflectToolSource]
    note: NotRequired[str]


class StatsToolMemories(TypedDict):
    total: int
    by_kind: dict[str, int]


class StatsToolFacts(TypedDict):
    total: int
    by_status: dict[str, int]


class StatsToolResult(TypedDict):
    tenant: str
    memories: StatsToolMemories
    facts: StatsToolFacts
    conversations: int
    turns: int
    contradictions: int
    jobs: dict[str, int]
    graph: dict[str, Any]


class StoreToolGate(TypedDict):
    decision: str
    composite: float | None
    reason: str


class StoreToolResult(TypedDict):
    memory_id: str | None
    status: str
    gate: StoreToolGate


class ConversationToolResult(TypedDict):
    conversation_id: str
    turns: int
    windows: schemas.WindowCounts


class CloseSessionToolResult(TypedDict):
    conversation_id: str
    turns: int
    facts: int | None
    handoff: sessions.Handoff
    note: NotRequired[str]


# ------------------------------------------------------------------ read


@MEMORY.tool("read")
def search(
    query: Annotated[str, Field(min_length=1, max_length=2000, description="What to find.")],
    limit: Annotated[
        int | None, Field(ge=1, le=50, description="Results, 1-50 (default 10).")
    ] = None,
    kind: Annotated[
        list[Literal["window", "note", "fact"]] | None,
        Field(description="Only these: window (conversation excerpt), note, fact."),
    ] = None,
    source: Annotated[str | None, Field(description="Only this source.")] = None,
    consistency: Annotated[
        Literal["replica", "primary"],
        Field(description="primary: also see what you stored moments ago (replicas may lag)."),
    ] = "replica",
    max_tokens: Annotated[
        int | None,
        Field(ge=1, le=100_000, description="Fill about this many tokens with the best hits."),
    ] = None,
) -> SearchToolResult:
    """Search long-term memory by meaning and keywords. Returns the best hits (id, kind,
    date, score, text), best first; current facts only."""
    runtime = current()
    request = SearchRequest(
        query=query,
        limit=limit if limit or max_tokens else 10,
        max_tokens=max_tokens,
        filters=SearchFilters(kind=kind or None, source=source),
        consistency=consistency,
    )
    found = search_service.search(runtime.elephant, runtime.tenant(), request)
    return SearchToolResult(count=len(found.hits), results=[_tool_hit(hit) for hit in found.hits])


def _tool_hit(hit: SearchHit) -> SearchToolHit:
    shown = SearchToolHit(
        id=hit.id,
        kind=hit.kind,
        date=_date(hit.event_at or hit.created_at),
        source=hit.source,
        score=round(hit.score, 4),
        text=hit.text,
    )
    if isinstance(hit.superseded_by, list):
        shown["superseded_by"] = hit.superseded_by
    return shown


@MEMORY.tool("read")
def reflect(
    query: Annotated[str, Field(min_length=1, max_length=4000, description="The question.")],
    limit: Annotated[int | None, Field(ge=1, le=60, description="Sources to read.")] = None,
) -> ReflectToolResult:
    """Answer a question from memory with numbered source citations [n]. Without an LLM
    configured it returns the sources only."""
    runtime = current()
    result = reflect_service.reflect(
        runtime.elephant, runtime.tenant(), reflect_service.ReflectIn(query=query, limit=limit)
    )
    compact = ReflectToolResult(
        answer=result.answer,
        citations=result.citations,
        sources=[
            ReflectToolSource(n=s.n, id=s.id, kind=s.kind, date=s.date, text=s.text)
            for s in result.sources
        ],
    )
    if isinstance(result.note, str) and result.note:
        compact["note"] = result.note
    return compact


@MEMORY.tool("read")
def stats() -> StatsToolResult:
    """Counts of what memory holds: memories by kind, facts by status, conversations,
    turns, contradictions, background jobs and the knowledge graph."""
    runtime = current()
    report = stats_service.stats(runtime.elephant, runtime.tenant())
    return StatsToolResult(
        tenant=report.tenant,
        memories=StatsToolMemories(total=report.memories.total, by_kind=report.memories.by_kind),
        facts=StatsToolFacts(total=report.facts.total, by_status=report.facts.by_status),
        conversations=report.conversations,
        turns=report.turns,
        contradictions=report.contradictions,
        jobs=report.jobs,
        graph=msgspec.to_builtins(report.graph),
    )


@MEMORY.tool("read")
def get_handoff(project: Project) -> sessions.Handoff:
    """The handoff of the project's last closed session: summary, decisions, open
    questions, next steps. Call it when a session starts."""
    runtime = current()
    return sessions.get_handoff(runtime.elephant, runtime.tenant(), project)


# ------------------------------------------------------------------ write


@MEMORY.tool("write")
def store(
    text: Annotated[
        str, Field(min_length=1, description="The note, self-contained: who, what, when.")
    ],
    source: Annotated[str, Field(description="Where it comes from, e.g. claude-code.")] = "mcp",
    importance: Annotated[float | None, Field(ge=0, le=100, description="0-100; 50.")] = None,
    occurred_at: Date = None,
    force: Annotated[bool, Field(description="Store even if the gate rejects it.")] = False,
    subject: Annotated[
        str | None, Field(description='Who "I" in the note is; default: the owner.')
    ] = None,
) -> StoreToolResult:
    """Remember a note in long-term memory. Duplicates are detected and an admission gate
    rejects chit-chat and vague text; facts are extracted in the background."""
    runtime = current()
    note = schemas.NoteIn(
        text=text,
        source=source,
        importance=importance,
        occurred_at=occurred_at,
        force=force,
        subject=subject,
    )
    result = commit.commit_note(runtime.elephant, runtime.tenant(), note)
    composite = result.gate.composite
    return StoreToolResult(
        memory_id=result.memory_id,
        status=result.status,
        gate=StoreToolGate(
            decision=result.gate.decision,
            composite=None if composite is None else round(composite, 2),
            reason=result.gate.reason,
        ),
    )


@MEMORY.tool("write")
def commit_conversation(
    turns: Turns,
    session_date: Date = None,
    conversation_id: Annotated[
        str | None, Field(description="Your id; the same id again appends turns.")
    ] = None,
    source: Annotated[str, Field(description="Where it comes from.")] = "mcp",
) -> ConversationToolResult:
    """Store a conversation: every turn verbatim, plus overlapping windows for search.
    Relative dates in it ('yesterday') resolve against session_date."""
    runtime = current()
    conversation = schemas.ConversationIn(
        turns=turns, session_date=session_date, conversation_id=conversation_id, source=source
    )
    result = commit.commit_conversation(runtime.elephant, runtime.tenant(), conversation)
    return ConversationToolResult(
        conversation_id=result.conversation_id,
        turns=result.turns,
        windows=result.window_counts(),
    )


@MEMORY.tool("write")
def feedback(
    id: Annotated[str, Field(description="A memory or fact id from search.")],
    helpful: Annotated[bool, Field(description="Did it help? Raises or lowers its rank.")],
) -> feedback_service.FeedbackResult:
    """Tell memory whether a search result helped: it gains (+5) or loses (-10) importance."""
    runtime = current()
    try:
        target = UUID(id)
    except ValueError:
        raise InvalidInput(f"id: {id!r} is not a memory or fact id (a UUID)") from None
    return feedback_service.give_feedback_on(runtime.elephant, runtime.tenant(), target, helpful)


@MEMORY.tool("write")
def close_session(
    project: Project,
    transcript: Annotated[
        str | None, Field(description="The session as text; 'Name: text' lines are turns.")
    ] = None,
    turns: Annotated[
        list[schemas.TurnIn] | None, Field(description="Or the session as turns.")
    ] = None,
    session_date: Date = None,
) -> CloseSessionToolResult:
    """End a work session: store its transcript, extract facts, and write the handoff
    (summary, decisions, open questions, next steps) that get_handoff returns next time."""
    runtime = current()
    request = sessions.SessionCloseIn(
        project=project, transcript=transcript, turns=turns, session_date=session_date
    )
    result = sessions.close_session(runtime.elephant, runtime.tenant(), request, wait=True)
    compact = CloseSessionToolResult(
        conversation_id=result.conversation_id,
        turns=result.turns,
        facts=result.facts,
        handoff=result.handoff,
    )
    if isinstance(result.note, str):
        compact["note"] = result.note
    return compact


# ------------------------------------------------------------------ resources


def handoff_resource(project: str) -> str:
    """The latest handoff of a project, as JSON."""
    runtime = current()
    return json.dumps(
        msgspec.to_builtins(sessions.get_handoff(runtime.elephant, runtime.tenant(), project))
    )
