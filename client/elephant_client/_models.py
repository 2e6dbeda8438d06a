"""Typed results: frozen dataclasses mirroring the server's JSON responses.

Kept small on purpose: the fields a caller acts on are typed; deep diagnostic blocks
(search ``explain``, health and stats internals, erasure targets) stay ``dict``.
Dates are timezone-aware ``datetime`` objects (UTC days, as in GET /usage, are
``date``). Fields a newer server adds are dropped
on decoding (see ``_decode``), so an older client keeps working.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
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


@dataclass(frozen=True, kw_only=True, slots=True)
class GateDecision:
    """One row of the gate's log (GET /amac/decisions). ``memory_id``: the memory stored
    (accepted, forced) or matched (duplicate). ``rejected_text``: the whole text of a
    rejected note or window until it is admitted or erased; ``admittable``:
    ``admit_decision`` would store it."""

    id: int
    decision: Literal["accepted", "rejected", "forced", "duplicate"]
    kind: str
    source: str
    memory_id: str | None
    text_preview: str
    relevance: float | None
    novelty: float | None
    specificity: float | None
    composite: float | None
    threshold: float | None
    reason: str
    scorer: str
    created_at: datetime
    rejected_text: str | None
    admittable: bool
    conversation_id: str | None = None  # a window's conversation and turns
    turn_start: int | None = None
    turn_end: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Admission:
    """POST /amac/decisions/{id}/admit: ``memory_id`` now holds the rejected note's text
    (``status`` stored, or duplicate when the same text had been stored since);
    ``admission_id`` is the new decision row, whose reason names ``decision_id``."""

    decision_id: int
    admission_id: int | None
    memory_id: str | None
    status: Literal["stored", "duplicate", "rejected"]
    gate: GateVerdict
    job_id: int | None


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
    # score is the ranking score: the results come sorted by it; fused_score (RRF + prior)
    # only with explain
    fused_score: float | None = None
    rrf: float | None = None
    prior: float | None = None
    rerank_score: float | None = None
    superseded_by: list[str] | None = None  # a memory whose facts were all superseded
    also: list[str] | None = None  # results with the same text, shown once in this place


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


# ------------------------------------------------------------------ usage


@dataclass(frozen=True, kw_only=True, slots=True)
class UsagePrices:
    """USD per million tokens; ``configured`` false when no price is set (no cost)."""

    in_per_mtok: float
    out_per_mtok: float
    configured: bool
    note: str


@dataclass(frozen=True, kw_only=True, slots=True)
class UsageRow:
    """LLM calls summed over one day and operation, or (``day`` None) one operation over
    the window, or (``operation`` None) one day, or (both None) all of it. ``cost_usd``
    is None when no price is configured; the latencies are None without calls."""

    day: date | None
    operation: str | None
    calls: int
    failures: int
    tokens_in: int
    tokens_out: int
    latency_ms_mean: float | None
    latency_ms_p95: float | None
    cost_usd: float | None


@dataclass(frozen=True, kw_only=True, slots=True)
class UsageReport:
    """GET /usage: LLM usage of the last ``days`` UTC days (``since`` to ``until``, both
    included). ``by_day`` has every day (zeros too), ``by_day_operation`` only the
    groups with calls; ``operations`` every operation seen, in name order."""

    days: int
    since: date
    until: date
    prices: UsagePrices
    total: UsageRow
    operations: list[str]
    by_operation: list[UsageRow]
    by_day: list[UsageRow]
    by_day_operation: list[UsageRow]


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
class ChainLink:
    """A fact of a history's chain. ``step``: 0 the fact asked for, -1 what it replaced,
    -2 what that replaced, ...; 1 what replaced it, 2 what replaced that, ..."""

    step: int
    id: str
    text: str
    subject: str | None
    status: str
    valid_from: datetime | None
    valid_to: datetime | None
    recorded_at: datetime
    expired_at: datetime | None
    superseded_by: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class ChainContradiction:
    """A contradiction along a fact's chain: ``older`` was closed in favour of ``newer``;
    ``role`` is the asked-for fact's part in it."""

    id: int
    older_id: str
    older_text: str
    newer_id: str
    newer_text: str
    detector: str
    score: float
    reason: str
    created_at: datetime
    role: Literal["older", "newer", "other"]


@dataclass(frozen=True, kw_only=True, slots=True)
class FactHistory:
    """GET /facts/{id}/history: the fact, its chain oldest first (itself at step 0) and
    the contradictions along it, newest first. ``truncated``: the chain goes on."""

    fact: Fact
    chain: list[ChainLink]
    contradictions: list[ChainContradiction]
    truncated: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class ErasureReport:
    """POST /erase, DELETE /memories/{id}, DELETE /facts/{id}: what was (or would be,
    with ``dry_run``) removed, counted per table."""

    target: dict[str, Any]
    dry_run: bool
    removed: dict[str, int]
    graph: dict[str, Any]
    total: int


# ------------------------------------------------------------------ conversations, sessions


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
class ConversationSummary:
    """A conversation (GET /conversations): ids, source, dates and counts. ``windows``
    counts its stored windows; ``project`` is set when it was a closed session."""

    id: str
    external_id: str | None
    source: str
    session_date: datetime | None
    created_at: datetime
    turns: int
    windows: int
    speakers: list[str]
    first_turn_at: datetime | None
    last_turn_at: datetime | None
    project: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class TranscriptTurn:
    """One turn as stored: ``seq`` counts from 0; ``turn_id`` is the caller's id for it."""

    seq: int
    speaker: str
    text: str
    occurred_at: datetime | None
    turn_id: str | None
    created_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class TranscriptWindow:
    """A window cut from turns ``turn_start``-``turn_end`` (inclusive) and the gate's
    decision on it. ``memory_id``: the stored memory, or the one it duplicates; the
    decision and scores are None when its log row is gone."""

    turn_start: int
    turn_end: int
    status: Literal["stored", "duplicate", "rejected"]
    memory_id: str | None
    decision: Literal["accepted", "rejected", "forced", "duplicate"] | None = None
    composite: float | None = None
    threshold: float | None = None
    reason: str | None = None
    scorer: str | None = None
    decided_at: datetime | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Transcript:
    """GET /conversations/{id}: every turn in order, the windows (each with the gate's
    decision) by turn range, and the handoffs of its sessions."""

    conversation: ConversationSummary
    turns: list[TranscriptTurn]
    windows: list[TranscriptWindow]
    handoffs: list[Handoff]


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
class AnalystInfo:
    """A SQL analyst role (a read-only Postgres login bound to its tenants)."""

    name: str
    role: str
    tenants: list[str]
    statement_timeout_seconds: int
    created_by: str
    created_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class CreatedAnalyst(AnalystInfo):
    """POST /analysts: the record, its ``password`` (shown this once) and ``connection``
    (where it logs in, without the password)."""

    password: str
    connection: str
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


# ------------------------------------------------------------------ store


@dataclass(frozen=True, kw_only=True, slots=True)
class StoreItem:
    """A store item (PUT /store/items and the rest): ``updated_at`` is when this version
    was put, ``created_at`` the item's first put; ``score`` from a search with a query;
    ``superseded_at`` / ``superseded_by`` in a history (None: the current version)."""

    namespace: list[str]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    memory_id: str
    score: float | None = None
    superseded_at: datetime | None = None
    superseded_by: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ItemPut:
    """A put: the new version, the memory of the one it replaced (None: a new item),
    its fact extraction job, and with ``wait`` the facts extracted."""

    item: StoreItem
    replaced: str | None
    job_id: int | None
    facts: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ItemHistory:
    namespace: list[str]
    key: str
    versions: list[StoreItem]


@dataclass(frozen=True, kw_only=True, slots=True)
class ItemDeleted:
    deleted: bool
    memory_id: str | None
