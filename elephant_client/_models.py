"""Typed results: frozen dataclasses mirroring the server's JSON responses.

Kept small on purpose: the fields a caller acts on are typed; deep diagnostic blocks
(search ``explain``, health and stats internals, erasure targets) stay ``dict``.
Dates are timezone-aware ``datetime`` objects. Fields a newer server adds are dropped
on decoding (see ``_decode``), so an older client keeps working.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

T = TypeVar("T")

# ------------------------------------------------------------------ paging


@dataclass(frozen=True, kw_only=True, slots=True)
class Page(Generic[T]):
    """One page of a list endpoint; pass ``next_cursor`` back as ``cursor`` for the next
    (None: this was the last page). The ``iter_*`` methods do that for you."""

    items: list[T]
    next_cursor: str | None = None


# ------------------------------------------------------------------ writes


@dataclass(frozen=True, kw_only=True, slots=True)
class GateVerdict:
    """The admission gate's decision on one text."""

    decision: Literal["accepted", "rejected", "forced", "duplicate"]
    relevance: float | None
    novelty: float | None
    specificity: float | None
    composite: float | None
    threshold: float
    reason: str
    scorer: str


@dataclass(frozen=True, kw_only=True, slots=True)
class CommitResult:
    """POST /commit. ``memory_id`` is the stored memory (or the one this duplicates)."""

    memory_id: str | None
    status: Literal["stored", "duplicate", "rejected"]
    duplicate_of: str | None
    gate: GateVerdict
    job_id: int | None
    job_status: str | None
    facts: int | None


@dataclass(frozen=True, kw_only=True, slots=True)
class WindowOutcome:
    memory_id: str | None
    turn_start: int
    turn_end: int
    status: Literal["stored", "duplicate", "rejected"]
    composite: float | None
    reason: str


@dataclass(frozen=True, kw_only=True, slots=True)
class WindowReport:
    stored: int
    duplicate: int
    rejected: int
    items: list[WindowOutcome] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True, slots=True)
class ConversationResult:
    """POST /commit_conversation."""

    conversation_id: str
    turns: int
    windows: WindowReport
    job_ids: list[int]
    job_statuses: list[str] | None
    facts: int | None


@dataclass(frozen=True, kw_only=True, slots=True)
class FeedbackResult:
    memory_id: str | None
    fact_id: str | None
    delta: float
    importance: float


@dataclass(frozen=True, kw_only=True, slots=True)
class GateCounts:
    total: int
    accepted: int
    rejected: int
    forced: int
    duplicate: int
    llm_fallbacks: int


@dataclass(frozen=True, kw_only=True, slots=True)
class GateScores:
    relevance: float | None
    novelty: float | None
    specificity: float | None
    composite: float | None


@dataclass(frozen=True, kw_only=True, slots=True)
class GateRejection:
    id: int
    memory_id: str | None
    kind: str
    source: str
    text_preview: str
    composite: float | None
    threshold: float | None
    reason: str
    scorer: str
    created_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class GateMetrics:
    """GET /amac/metrics: the admission gate's counts and scores for the tenant."""

    threshold: float
    counts: GateCounts
    accept_rate: float | None
    mean_scores: GateScores
    composite_histogram: dict[str, int]
    recent_rejections: list[GateRejection]
    empty: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class GateThreshold:
    threshold: float


# ------------------------------------------------------------------ contradictions, jobs


@dataclass(frozen=True, kw_only=True, slots=True)
class ContradictionSide:
    id: str
    text: str
    valid_from: datetime | None
    valid_to: datetime | None = None
    status: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Contradiction:
    id: int
    detector: str
    score: float
    reason: str
    created_at: datetime
    older: ContradictionSide
    newer: ContradictionSide


@dataclass(frozen=True, kw_only=True, slots=True)
class Job:
    id: int
    kind: str
    status: str
    attempts: int
    max_attempts: int
    run_after: datetime
    last_error: str | None
    created_at: datetime
    finished_at: datetime | None


@dataclass(frozen=True, kw_only=True, slots=True)
class JobsPage(Page[Job]):
    """GET /jobs: a page of jobs and the tenant's job counts by status."""

    counts: dict[str, int] = field(default_factory=dict)


# ------------------------------------------------------------------ search, reflect


@dataclass(frozen=True, kw_only=True, slots=True)
class LaneRanks:
    """Where a hit ranked in each search lane (None: the lane did not find it)."""

    windows: int | None = None
    facts: int | None = None
    keyword: int | None = None
    graph: int | None = None
    preferences: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchHit:
    id: str
    kind: str
    text: str
    source: str | None
    score: float
    created_at: datetime
    event_at: datetime | None
    valid_to: datetime | None
    subject: str | None
    status: str | None
    memory_id: str | None
    source_turn_ids: list[str]
    importance: float
    ranks: LaneRanks
    rrf: float | None = None
    prior: float | None = None
    rerank_score: float | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchResult:
    """POST /search. ``explain`` (timings, lanes) when asked for."""

    query: str
    count: int
    results: list[SearchHit]
    explain: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ReflectSource:
    n: int
    id: str
    kind: str
    date: str
    source: str | None
    text: str
    score: float


@dataclass(frozen=True, kw_only=True, slots=True)
class ReflectUsage:
    tokens_in: int
    tokens_out: int
    latency_ms: float


@dataclass(frozen=True, kw_only=True, slots=True)
class Reflection:
    """POST /reflect: an answer citing ``sources`` by their ``n`` (None without an LLM)."""

    question: str
    route: str
    answer: str | None
    citations: list[int]
    sources: list[ReflectSource]
    search_elapsed_ms: float
    reflect_model: str | None
    usage: ReflectUsage | None
    note: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Suggestions:
    """POST /proactive."""

    query: str
    suggestions: list[SearchHit]
    skipped: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class StatsCounts:
    total: int
    by_source: dict[str, int]
    text_bytes: int
    by_kind: dict[str, int] = field(default_factory=dict)
    by_status: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class Stats:
    """GET /stats. ``graph`` and ``storage`` are diagnostic blocks kept as dicts."""

    tenant: str
    memories: StatsCounts
    facts: StatsCounts
    conversations: int
    turns: int
    contradictions: int
    jobs: dict[str, int]
    keyword_engine: str
    graph: dict[str, Any] = field(default_factory=dict)
    storage: dict[str, Any] = field(default_factory=dict)


# ------------------------------------------------------------------ records


@dataclass(frozen=True, kw_only=True, slots=True)
class Memory:
    """A stored note or conversation window (GET /memories, /memories/{id})."""

    id: str
    kind: str
    text: str
    source: str
    importance: float
    conversation_id: str | None
    conversation_external_id: str | None = None
    turn_start: int | None
    turn_end: int | None
    source_turn_ids: list[str]
    event_at: datetime | None
    created_at: datetime
    seen_count: int
    access_count: int
    last_accessed_at: datetime | None
    metadata: dict[str, Any]
    facts: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class EntityLink:
    key: str
    link: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Fact:
    """An atomic fact with its bi-temporal fields (GET /facts, /facts/{id})."""

    id: str
    text: str
    subject: str | None
    fact_type: str
    confidence: float
    importance: float
    status: str
    valid_from: datetime | None
    valid_to: datetime | None
    recorded_at: datetime
    expired_at: datetime | None
    superseded_by: str | None
    memory_id: str | None
    conversation_id: str | None
    source: str | None
    source_turn_ids: list[str]
    entities: list[EntityLink]
    metadata: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class ErasureReport:
    """POST /erase, DELETE /memories/{id}, DELETE /facts/{id}: what was (or would be,
    with ``dry_run``) removed, counted per table."""

    target: dict[str, Any]
    dry_run: bool
    removed: dict[str, int]
    graph: dict[str, Any]
    total: int


# ------------------------------------------------------------------ sessions


@dataclass(frozen=True, kw_only=True, slots=True)
class Handoff:
    id: int
    project: str
    created_at: datetime
    conversation_id: str | None
    summary: str
    decisions: list[str]
    open_questions: list[str]
    next_steps: list[str]
    generator: str


@dataclass(frozen=True, kw_only=True, slots=True)
class WindowCounts:
    stored: int
    duplicate: int
    rejected: int


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionClosed:
    """POST /sessions/close."""

    project: str
    conversation_id: str
    turns: int
    windows: WindowCounts
    facts: int | None
    job_statuses: list[str] | None
    handoff: Handoff
    note: str | None = None


# ------------------------------------------------------------------ graph


@dataclass(frozen=True, kw_only=True, slots=True)
class GraphWrite:
    """A graph write (record, decisions, revise, entities, relations, observations):
    what was created, merged, closed or invalidated."""

    entities_created: list[str]
    entities_merged: list[str]
    relations_created: int
    relations_existing: int
    observations_added: int
    observations_duplicate: int
    observation_ids: list[str]
    relations_closed: int | None = None
    revised: str | None = None
    superseded_by: str | None = None
    observations_invalidated: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class GraphChange:
    """A graph invalidation or deletion: the count of what changed (one field is set)
    and, for entities, the names not found."""

    entities_deleted: int | None = None
    relations_deleted: int | None = None
    observations_deleted: int | None = None
    relations_invalidated: int | None = None
    observations_invalidated: int | None = None
    missing: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True, slots=True)
class GraphObservation:
    id: str
    content: str
    kind: str
    source: str | None
    valid_from: datetime | None
    recorded_at: datetime
    valid_to: datetime | None = None
    status_now: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class GraphRelation:
    source: str
    relation_type: str
    target: str
    valid_from: datetime | None
    valid_to: datetime | None
    epistemic: str


@dataclass(frozen=True, kw_only=True, slots=True)
class GraphEntity:
    """An entity without its observations (GET /graph nodes)."""

    name: str
    entity_type: str
    domain: str
    epistemic: str
    source: str
    valid_from: datetime | None
    valid_to: datetime | None
    created_at: datetime | None
    updated_at: datetime | None


@dataclass(frozen=True, kw_only=True, slots=True)
class GraphNode:
    """An entity with its active observations and relations (bounded, see the totals)."""

    name: str
    entity_type: str
    domain: str
    epistemic: str
    source: str
    valid_from: datetime | None
    valid_to: datetime | None
    created_at: datetime | None
    updated_at: datetime | None
    observations: list[GraphObservation]
    observations_total: int
    relations: list[GraphRelation]
    relations_total: int
    relations_truncated: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class EntitySummary:
    """An entity with counts only (GET /graph/entities with summary=true)."""

    name: str
    entity_type: str
    domain: str
    epistemic: str
    observations: int
    relations: int


@dataclass(frozen=True, kw_only=True, slots=True)
class NodeSearch:
    """GET /graph/search."""

    query: str
    entities: list[GraphNode]
    total_matched: int
    truncated: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class OpenedNodes:
    """POST /graph/open."""

    entities: list[GraphNode]
    missing: list[str]


@dataclass(frozen=True, kw_only=True, slots=True)
class Neighbourhood:
    """GET /graph: nodes and edges around the entities a query names."""

    nodes: list[GraphEntity]
    edges: list[GraphRelation]
    truncated: bool


# ------------------------------------------------------------------ access, tenant, health


@dataclass(frozen=True, kw_only=True, slots=True)
class KeyInfo:
    """An API key's record (never the key itself)."""

    prefix: str
    name: str
    tenant: str | None
    all_tenants: bool
    scopes: list[str]
    created_by: str
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None


@dataclass(frozen=True, kw_only=True, slots=True)
class CreatedKey(KeyInfo):
    """POST /keys: the record and ``key``, shown this once."""

    key: str
    note: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class AuditEntry:
    id: int
    at: datetime
    tenant: str | None
    key_prefix: str | None
    action: str
    target: str
    outcome: str
    client: str | None
    detail: dict[str, Any]


@dataclass(frozen=True, kw_only=True, slots=True)
class Owner:
    """GET/PUT /tenant/owner: who "I" in the tenant's notes is, and where that is set."""

    owner: str
    source: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Health:
    """GET /health. ``status`` is ok, degraded or unavailable (the latter with HTTP 503,
    returned here rather than raised: the report says what is down)."""

    status: str
    version: str
    database: dict[str, Any]
    embedding: dict[str, Any]
    schema: dict[str, Any] | None = None
