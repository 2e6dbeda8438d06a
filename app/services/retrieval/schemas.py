"""What a search takes and gives: the request (filters, lane sizes, priors), the hits, the
explain block, and the response /search and the MCP tool return.

Inputs are pydantic models (validated at the door, with field descriptions for OpenAPI);
outputs are msgspec Structs and frozen dataclasses (encoded as they are). A hit is one
type with two faces: ``SearchHit`` as ranked (with its fusion details) and
``SearchHitView`` as shown (fusion details only with explain).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, UnsetType
from pydantic import BaseModel, ConfigDict, Field

from app.db.replicas import Consistency
from app.services.common.inputs import Metadata, NamespaceLabel, NonBlank, Real, Text, When
from app.services.retrieval.lanes import LaneRanks, LaneSizes

Kind = Literal["window", "note", "fact"]


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class SearchFilters(_Input):
    source: Text | list[Text] | None = Field(None, description="Only these sources.")
    kind: Kind | list[Kind] | None = Field(None, description="window, note and/or fact.")
    created_after: When | None = None
    created_before: When | None = None
    event_after: When | None = Field(None, description="Event date (facts: valid_from).")
    event_before: When | None = None
    as_of: When | None = Field(None, description="Only facts valid at this instant.")
    include_expired: bool = Field(
        False, description="Also superseded and expired facts, and superseded store items."
    )
    item_namespace: Annotated[list[NamespaceLabel], Field(max_length=20)] | None = Field(
        None,
        description="Only store items (PUT /store/items) under this namespace prefix "
        "([] any item), and their facts.",
    )
    item_value: Metadata | None = Field(
        None, description="Only store items whose value contains these fields (JSON containment)."
    )

    def item_namespace_text(self) -> str | None:
        """The prefix as memories.item_namespace holds it (labels joined by '.')."""
        if self.item_namespace is None:
            return None if self.item_value is None else ""
        return ".".join(self.item_namespace)

    def sources(self) -> list[str] | None:
        if self.source is None:
            return None
        return [self.source] if isinstance(self.source, str) else list(self.source)

    def kinds(self) -> set[str]:
        if self.kind is None:
            return {"window", "note", "fact"}
        return {self.kind} if isinstance(self.kind, str) else set(self.kind)


class SearchRequest(_Input):
    query: NonBlank = Field(max_length=20000)
    limit: int | None = Field(
        None, ge=1, le=200, description="1-200 (default search.default_limit)."
    )
    filters: SearchFilters = Field(default_factory=SearchFilters)
    expand: bool | None = Field(None, description="Add query variants (default search.expand).")
    explain: bool = Field(False, description="Add timings and lane details.")
    max_tokens: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="Fill about this many tokens (estimated as characters / 4) with the best "
        "results in rank order, skipping one that does not fit or only repeats turns already "
        "given; limit then caps the count only when given (else up to 200).",
    )
    decompose: bool | None = Field(
        None,
        description="Also search each name of a conjunction of names in the question "
        '("Jon and Gina") on its own (default search.decompose).',
    )
    lanes: LaneSizes = Field(default_factory=LaneSizes)
    recency_weight: Real | None = Field(None, ge=0, le=1)
    activation_weight: Real | None = Field(
        None,
        ge=0,
        le=10,
        description="Activation prior: what is important and in use ranks higher "
        "(default lifecycle.search_weight; 0 = off).",
    )
    asked_at: When | None = Field(
        None,
        description="When the question is asked: relative dates in it (last week) resolve "
        "against this; default now.",
    )
    rerank: bool | None = Field(
        None, description="Rerank the fused pool with the reranker service (reranker.enabled)."
    )
    diversify: bool | None = Field(
        None,
        description="Results that only repeat turns shown above them go below those that bring "
        "new turns (default search.diversify).",
    )
    consistency: Consistency = Field(
        "replica",
        description="replica: a read replica may answer (database.replica_urls; it can lag "
        "the primary by up to database.replica_max_lag_s). primary: see every write committed "
        "so far, e.g. right after your own.",
    )


class HitFields(msgspec.Struct, frozen=True, kw_only=True):
    """What a hit is, as stored: shared by the hit the service ranks and the one it shows."""

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
    # a memory whose facts were all superseded: the memories that superseded them
    superseded_by: list[str] | UnsetType = UNSET
    # results with the same text folded into this place (a fact made from this memory)
    also: list[str] | UnsetType = UNSET


class SearchHitView(HitFields, frozen=True, kw_only=True):
    """One hit as the API returns it. ``score`` is the ranking score, the one the list is
    sorted by (app/services/retrieval/ordering.py). ``fused_score`` (the statement's: its
    ``rrf`` and ``prior``), ``activation`` and ``variants`` only with explain;
    ``rerank_score`` with explain, or whenever the reranker scored it."""

    fused_score: float | UnsetType = UNSET
    rrf: float | UnsetType = UNSET
    prior: float | UnsetType = UNSET
    activation: float | UnsetType = UNSET
    variants: list[int] | UnsetType = UNSET
    rerank_score: float | UnsetType | None = UNSET


class SearchHit(HitFields, frozen=True, kw_only=True):
    """A ranked hit with its fusion details (the reranker sets ``rerank_score``)."""

    rrf: float
    prior: float
    variants: list[int]
    rerank_score: float | None = None
    activation: float = 0.0  # 0-1, app/services/lifecycle/activation.py

    def view(self, explain: bool) -> SearchHitView:
        stored = {name: getattr(self, name) for name in HitFields.__struct_fields__}
        shown = SearchHitView(**{**stored, "score": round(self.score, 6)})
        if explain:
            return msgspec.structs.replace(
                shown,
                fused_score=round(self.rrf + self.prior, 6),
                rrf=round(self.rrf, 6),
                prior=round(self.prior, 6),
                activation=round(self.activation, 6),
                variants=self.variants,
                rerank_score=self.rerank_score,
            )
        if self.rerank_score is not None:
            return msgspec.structs.replace(shown, rerank_score=self.rerank_score)
        return shown


@dataclass(frozen=True, slots=True)
class GraphLaneReport:
    """Entity keys the query names, and their 1-hop neighbours (the graph lane's input)."""

    named: list[str]
    neighbours: list[str]


class RerankReport(msgspec.Struct, frozen=True, kw_only=True):
    """Whether the reranker reordered the pool: model, pool and time when it did; the
    reason (and the fallback order) when it did not."""

    used: bool
    fallback: str | UnsetType = UNSET
    reason: str | UnsetType = UNSET
    model: str | UnsetType = UNSET
    pool: int | UnsetType = UNSET
    elapsed_ms: float | UnsetType = UNSET


@dataclass(frozen=True, slots=True)
class RecencyPrior:
    weight: float
    half_life_days: float
    on: bool


@dataclass(frozen=True, slots=True)
class ActivationPrior:
    """A hit gained ``weight`` x its activation / (rrf_k + 1); activation decays with this
    half-life (days, at importance 50; x / ÷ ``importance_factor`` at importance 100 / 0)."""

    weight: float
    half_life_days: float
    importance_factor: float
    access_boost: float
    on: bool


@dataclass(frozen=True, slots=True)
class DatePrior:
    """The dates the question names; results dated in [after, before) were lifted by
    ``weight`` rank-1 hits of one lane."""

    phrases: list[str]
    after: datetime
    before: datetime
    weight: float


@dataclass(frozen=True, slots=True)
class SearchTimings:
    """Milliseconds: embedding the variants, the SQL statement, the whole search."""

    embedding: float
    sql: float
    total: float


@dataclass(frozen=True, slots=True)
class SearchExplain:
    variants: list[str]
    lanes: dict[str, int]
    keyword_engine: str
    graph: GraphLaneReport
    reranker: RerankReport
    rrf_k: int
    diversified: bool
    pool: int
    recency_prior: RecencyPrior
    date_prior: DatePrior | None
    activation_prior: ActivationPrior
    timings_ms: SearchTimings
    # how the dense lanes were served: exact (a scan of the tenant's rows), own (its own
    # HNSW indexes) or shared (the HNSW graphs every tenant shares)
    vector_way: str = "exact"
    # the question's sub-queries (app/services/retrieval/decomposition.py), among variants
    sub_queries: list[str] = field(default_factory=list)
    sub_queries_from: str | None = None  # "rules" or "llm" (search.decompose_llm)
    # the token budget asked for (max_tokens) and the estimated tokens of the results
    max_tokens: int | None = None
    tokens: int = 0


class SearchResponse(msgspec.Struct, frozen=True, kw_only=True):
    """What /search returns; ``explain`` only when asked for."""

    query: str
    count: int
    results: list[SearchHitView]
    explain: SearchExplain | UnsetType = UNSET


@dataclass
class SearchResult:
    query: str
    hits: list[SearchHit]
    variants: list[str]
    explain: SearchExplain | None = field(default=None)

    def response(self) -> SearchResponse:
        explaining = self.explain is not None
        return SearchResponse(
            query=self.query,
            count=len(self.hits),
            results=[hit.view(explaining) for hit in self.hits],
            explain=UNSET if self.explain is None else self.explain,
        )
