"""Retrieval: the search lanes and their fusion, the reranker, and reflect.

``search`` sizes and weighs each lane (windows, facts, keyword, graph, preferences),
the Reciprocal Rank Fusion and the priors added to it, and how per-tenant vector
indexes are chosen; ``reranker`` reorders the fused pool through the reranker service;
``reflect`` bounds the sources an answer is written from.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.config.base import _Section


class SearchSettings(_Section):
    windows: int = Field(45, ge=0, le=1000, description="Windows-dense lane size per variant.")
    facts: int = Field(15, ge=0, le=1000, description="Facts-dense lane size per variant.")
    keyword: int = Field(
        10, ge=0, le=1000, description="Keyword lane size per variant (memories and facts each)."
    )
    generic_plan: bool = Field(
        True,
        description="Plan the search statement once per connection (a generic plan) instead "
        "of on every search. Off: Postgres chooses (custom plans first).",
    )
    rrf_k: int = Field(
        10,
        ge=1,
        le=10000,
        description="Reciprocal Rank Fusion constant: smaller trusts each lane's first results "
        "more (10 chosen on LoCoMo conversations 1-5 from 5, 10, 15, 30, 60).",
    )
    windows_weight: float = Field(1.0, ge=0, le=10, description="RRF weight of the windows lane.")
    passage_share: float = Field(
        0.5,
        ge=0,
        le=1,
        description="Share of a window's dense score taken from its best passage (a turn, or a "
        "part of a long turn or note) rather than the whole-window vector; 0: window vector only.",
    )
    passage_candidates: int = Field(
        10,
        ge=0,
        le=1000,
        description="How many nearest passages per variant bring in their windows (the windows "
        "lane's candidates besides its nearest windows; at most windows of them); 0: none, "
        "the passage blend still applies to the other candidates. 10 chosen from 45, 20, 10: "
        "the same LoCoMo recall, fewer windows to score.",
    )
    facts_weight: float = Field(1.0, ge=0, le=10, description="RRF weight of the facts lane.")
    keyword_weight: float = Field(1.0, ge=0, le=10, description="RRF weight of the keyword lane.")
    variant_weight: float = Field(
        0.3, ge=0, le=1, description="RRF weight of each added query variant (the query: 1)."
    )
    default_limit: int = Field(10, ge=1, le=200, description="Results when a request names none.")
    expand: bool = Field(
        False,
        description="Add query variants (names, paraphrases) unless a request says otherwise; "
        "off by default: on LoCoMo it lowered recall@1 and @10 (benchmarks/locomo.py).",
    )
    decompose: bool = Field(
        True,
        description='A question naming several people or places ("Jon and Gina", "Paris, '
        'Rome or Oslo") is also searched once per name, as query variants fused with it '
        "(benchmarks/locomo.py: all-evidence@10 up on both halves of the split).",
    )
    decompose_llm: bool = Field(
        False,
        description="With an LLM configured, ask it for the question's sub-queries (cached "
        "per tenant and question; the rules answer when it fails) instead of the rules. Off: "
        "an LLM call before a new question's search, not measured on LoCoMo (no key here).",
    )
    max_variants: int = Field(5, ge=1, le=20, description="Most query variants per search.")
    diversify: bool = Field(
        True,
        description="Move results that only repeat conversation turns shown above them below "
        "the results that bring new turns (a window's own facts no longer crowd out other "
        "evidence).",
    )
    keyword_first_within: int = Field(
        3,
        ge=0,
        le=200,
        description="The keyword lane's best window or note goes first when fusion ranked it "
        "within this many results (0: off; not with the reranker). Chosen on LoCoMo "
        "conversations 1-5 among 2, 3, 5, 10: recall@1 0.621 -> 0.658 there, 0.580 -> 0.633 "
        "on 6-10.",
    )
    diversity_pool: int = Field(
        3, ge=1, le=10, description="With diversify: fused candidates fetched per result asked for."
    )
    keyword_engine: Literal["auto", "bm25", "tsvector"] = Field(
        "auto",
        description="auto: BM25 when pg_textsearch is installed and its probe finds what the "
        "tables hold, else tsvector ranking.",
    )
    keyword_statistics: Literal["tenant", "table"] = Field(
        "tenant",
        description="What the BM25 lane ranks by. tenant: the tenant's own statistics (how "
        "many of its documents hold a word, their length), over the index's best "
        "keyword_pool candidates. table: the index's statistics over every tenant's rows, "
        "which tell a tenant which words other tenants use (issue 40; for comparison only).",
    )
    keyword_pool: int = Field(
        50,
        ge=1,
        le=1000,
        description="With keyword_statistics = tenant: candidates per query variant and "
        "table that the BM25 lane rescores (at least the lane's size). A query whose words "
        "are in fewer of the tenant's documents is ranked from the tenant's rows alone.",
    )
    bm25_rebuild_on_restart: bool = Field(
        True,
        description="REINDEX the BM25 indexes once per server start (pg_textsearch 1.0.0 "
        "loses statistics and unflushed postings at restart; ~2.5 s per 100k rows).",
    )
    keyword_probe_seconds: float = Field(
        60.0,
        ge=1,
        le=86400,
        description="/health probes the BM25 indexes again when its last probe is older "
        "than this; a failed probe switches search to tsvector and rebuilds them.",
    )
    tenant_index_rows: int = Field(
        20_000,
        ge=0,
        le=1_000_000_000,
        description="A tenant with fewer vector rows (in its largest of memories, facts, "
        "passages) is searched exactly; one with more gets HNSW indexes of its own, built "
        "online by the worker (0: every tenant gets its own).",
    )
    tenant_index_check_s: float = Field(
        300.0,
        ge=0,
        le=86400,
        description="How often the worker counts tenants' rows and builds or drops their "
        "own HNSW indexes (0: never; `elephant maintain tenant-indexes` runs it once).",
    )
    vector_way_cache_s: float = Field(
        30.0,
        ge=0,
        le=3600,
        description="How long a process remembers how a tenant's vector lanes are served "
        "(exact, own or shared indexes) before reading it again.",
    )
    recency_weight: float = Field(
        0.0,
        ge=0,
        le=1,
        description="Weight of the recency prior added to the fused score (0 = off).",
    )
    half_life_days: float = Field(23.0, gt=0, description="Half-life of the recency prior.")
    date_weight: float = Field(
        0.5,
        ge=0,
        le=10,
        description="A question that names a date or period lifts results dated then (event "
        "or valid_from, give or take a week) by this many rank-1 hits of one lane; 0: off.",
    )
    fact_support: float = Field(
        1.0,
        ge=0,
        le=10,
        description="A window gains this times the fused score of the best fact made from its "
        "turns (and joins the results if no lane found it): its facts speak for it.",
    )
    assistant_fact_weight: float = Field(
        0.5,
        ge=0,
        le=1,
        description="RRF score factor of facts an assistant said (facts.assistant_speakers): "
        "lower-trust than what a person said; 0 keeps them last, 1 treats them alike.",
    )
    recently_accessed_minutes: float = Field(
        30.0, ge=0, description="/proactive skips memories accessed this recently."
    )
    graph: int = Field(
        15,
        ge=0,
        le=1000,
        description="Graph lane size: facts of the 1-hop neighbours (recorded relations) of "
        "entities the query names (0 = off; absent with graph.enabled = false).",
    )
    graph_weight: float = Field(1.0, ge=0, le=10, description="RRF weight of the graph lane.")
    preferences: int = Field(
        2,
        ge=0,
        le=100,
        description="Preference lane size: the standing preferences and instructions "
        '("always ...", "I\'m vegetarian") nearest the question; 0: off.',
    )
    preferences_weight: float = Field(
        1.0, ge=0, le=10, description="RRF weight of the preference lane."
    )
    expansion_seeds: int = Field(
        10,
        ge=1,
        le=200,
        description="First-stage hits (fused, best first) the expansion lanes start from.",
    )
    entity_expansion: int = Field(
        0,
        ge=0,
        le=1000,
        description="Entity expansion lane size (memories, and as many facts): what names an "
        "entity the first hits name, hubs skipped, nearest the question first; 0: off.",
    )
    entity_expansion_weight: float = Field(
        1.0, ge=0, le=10, description="RRF weight of the entity expansion lane."
    )
    entity_expansion_per_entity: int = Field(
        10,
        ge=1,
        le=1000,
        description="Most rows of each kind one entity brings into the entity expansion lane.",
    )
    entity_match: int = Field(
        0,
        ge=0,
        le=1000,
        description="Entity match lane size (memories, and as many facts): what is linked to "
        "an entity the question names, hubs skipped, nearest the question first; 0: off.",
    )
    entity_match_weight: float = Field(
        1.0, ge=0, le=10, description="RRF weight of the entity match lane."
    )
    hub_mentions: int = Field(
        50,
        ge=0,
        le=1_000_000,
        description="An entity more memories and facts name than this is a hub (a chat's "
        "speakers): the entity lanes do not follow it.",
    )
    neighbours: int = Field(
        0,
        ge=0,
        le=1000,
        description="Neighbour lane size: conversation windows beside the first hits' windows "
        "in their session (an expansion lane); 0: off.",
    )
    neighbours_weight: float = Field(
        1.0, ge=0, le=10, description="RRF weight of the neighbour lane."
    )
    neighbour_turns: int = Field(
        2,
        ge=1,
        le=100,
        description="How far (in turns, either side) a neighbour window's first turn may lie "
        "from its seed window's: 2 with windows every 2 turns, the window before and after.",
    )
    timeline: int = Field(
        0,
        ge=0,
        le=1000,
        description="Timeline lane size: for a question about an order of events or a change "
        "over time, the named subject's facts, one per session, in time order; 0: off.",
    )
    timeline_weight: float = Field(1.0, ge=0, le=10, description="RRF weight of the timeline lane.")
    preference_min_similarity: float = Field(
        0.2,
        ge=-1,
        le=1,
        description="Cosine below which a standing preference is off the question's topic.",
    )


class RerankerSettings(_Section):
    enabled: bool = Field(False, description="Rerank the fused pool with the reranker service.")
    url: str = Field("http://127.0.0.1:7788", description="Base URL of reranker_server.")
    timeout_s: float = Field(2.0, gt=0, description="Seconds before search falls back to RRF.")
    pool: int = Field(70, ge=1, le=500, description="Fused candidates sent to the reranker.")
    instruction: str | None = Field(
        None, description="Instruction for instruction-aware rerankers (Qwen3-Reranker)."
    )
    failure_threshold: int = Field(
        3, ge=1, le=100, description="Consecutive failures that open the circuit breaker."
    )
    cooldown_s: float = Field(
        30.0, ge=0, description="Seconds the breaker stays open before one trial request."
    )


class ReflectSettings(_Section):
    limit: int = Field(10, ge=1, le=60, description="Sources given to the LLM.")
    max_context_chars: int = Field(
        12000, ge=500, le=200000, description="Longest numbered context block."
    )
