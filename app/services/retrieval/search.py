"""Hybrid search: query variants → one statement (sql/retrieval/hybrid_search.sql) → hits.

Every lane of every variant runs in that one statement, fused by RRF, over the
current tenant only (named in the statement and enforced by row-level security).
The dense lanes are served the tenant's way (app/db/tenant_indexes.py): an exact
scan of a small tenant's rows, or an HNSW walk over the tenant's own indexes (the
tenant written into the statement as a literal, so the planner can use them) or
the shared ones. Before it, the transaction sets hnsw.ef_search to at least the
largest lane, turns on pgvector's iterative scans (so tenant filtering cannot
starve a lane), and disables explicit sorts so that each index lane is an ordered
index scan (HNSW, bm25) rather than a sort of every tenant row.
"""

from __future__ import annotations

import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any, Literal

import msgspec
from psycopg.rows import namedtuple_row

from app.config import SearchSettings
from app.db.replicas import Consistency, ReplicaUnavailable
from app.db.resources import load_statement
from app.db.runtime import Connection
from app.db.tenant_indexes import Way, naming_tenant
from app.prompts import paraphrase as paraphrase_prompt
from app.providers.llm import LLMError
from app.providers.reranker import RerankerError
from app.services.graph.linking import lane_entities
from app.services.lifecycle.activation import ActivationParams
from app.services.ops import metrics
from app.services.retrieval.decomposition import sub_queries
from app.services.retrieval.diversity import (
    CHARS_PER_TOKEN,
    estimated_tokens,
    keyword_best_first,
    new_turns_first,
    within_budget,
)
from app.services.retrieval.entity_lanes import entity_lane_params
from app.services.retrieval.expansion import expand, keyword_text
from app.services.retrieval.lanes import (
    STATEMENT_SIZES,
    rank_in,
    ranks_of,
    requested_sizes,
    weight_parameters,
)
from app.services.retrieval.one_place import one_place
from app.services.retrieval.ordering import lifted, reranked, settled
from app.services.retrieval.query_dates import QuestionDates, question_dates
from app.services.retrieval.schemas import (
    ActivationPrior,
    DatePrior,
    GraphLaneReport,
    RecencyPrior,
    RerankReport,
    SearchExplain,
    SearchHit,
    SearchRequest,
    SearchResult,
    SearchTimings,
)
from app.services.retrieval.supersession import (
    about_the_present,
    below_successors,
    is_superseded,
    marked,
    superseded,
)
from app.services.retrieval.timeline import structure_lane_params
from app.services.runtime import Elephant

log = logging.getLogger(__name__)

MIN_EF_SEARCH = 40  # pgvector's default
MAX_LIMIT = 200  # the most results a search returns (SearchRequest.limit)


KEYWORD_LANES = {
    ("bm25", "tenant"): "keyword_bm25_tenant.sql",
    ("bm25", "table"): "keyword_bm25.sql",
}


@cache
def statement(engine: str, own_indexes_of: str | None = None, statistics: str = "tenant") -> str:
    """sql/retrieval/hybrid_search.sql with its slots filled: the filters
    (sql/retrieval/memory_filters.sql, sql/retrieval/fact_filters.sql) and the keyword
    lane of ``engine`` ("bm25" or "tsvector"); a bm25 lane ranks by the tenant's own
    ``statistics`` ("tenant") or by the index's over every tenant ("table").

    ``own_indexes_of``: a tenant with HNSW indexes of its own, written in as a literal
    (a validated tenant id: letters, digits, '_' and '-') so that the planner proves
    their ``WHERE tenant_id = '<tenant>'`` and walks them; a parameter cannot be proved.
    One statement text per such tenant (a few big ones), each prepared once."""
    lane = KEYWORD_LANES.get((engine, statistics), "keyword_tsvector.sql")
    text = load_statement("retrieval/hybrid_search.sql", keyword_lane=lane)
    return text if own_indexes_of is None else naming_tenant(text, own_indexes_of)


def keyword_engine(elephant: Elephant, conn: Connection | None = None) -> str:
    """bm25 or tsvector. Never bm25 on a replica: pg_textsearch keeps its corpus statistics
    and fresh postings outside the WAL, so on a standby its index finds nothing; nor while
    its probe says it misses rows (app/db/keyword_index.py) until it is rebuilt."""
    wanted = elephant.settings.search.keyword_engine
    available = bool(elephant.db.capabilities and elephant.db.capabilities.textsearch)
    available = available and elephant.db.keyword.trusted
    if conn is not None and elephant.db.replica_of(conn) is not None:
        available = False
    if wanted == "bm25" or (wanted == "auto" and available):
        return "bm25" if available else "tsvector"
    return "tsvector"


def _paraphrases(elephant: Elephant, tenant: str, query: str) -> list[str]:
    """LLM paraphrases of the query; the usage is queued for the primary (a search may
    run on a read-only replica)."""
    if elephant.llm is None:
        return []
    try:
        result = elephant.llm.complete_json(
            system=paraphrase_prompt.SYSTEM,
            prompt=paraphrase_prompt.build_prompt(query),
            schema=paraphrase_prompt.Paraphrases,
            max_tokens=300,
        )
    except LLMError as exc:
        elephant.access.usage(tenant, "paraphrase", exc.usage, ok=False, error=exc.message)
        return []
    elephant.access.usage(tenant, "paraphrase", result.usage, ok=True)
    return result.value.paraphrases


def _lane_sizes(elephant: Elephant, request: SearchRequest) -> dict[str, int]:
    return requested_sizes(elephant.settings.search, request.lanes, request.filters.kinds())


def _vector_version(elephant: Elephant) -> tuple[int, ...]:
    caps = elephant.db.capabilities
    version = caps.installed.get("vector", "0") if caps else "0"
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def search(
    elephant: Elephant, tenant: str, request: SearchRequest, *, record_access: bool = True
) -> SearchResult:
    """Read-only, on a replica when ``request.consistency`` allows; a replica that fails
    under the search (connection lost, recovery conflict) costs a second run on the
    primary, never the answer."""
    try:
        return _search(elephant, tenant, request, record_access, request.consistency)
    except ReplicaUnavailable as exc:
        log.warning("search failed on a read replica, running it on the primary: %s", exc)
        return _search(elephant, tenant, request, record_access, "primary")


def _search(
    elephant: Elephant,
    tenant: str,
    request: SearchRequest,
    record_access: bool,
    consistency: Consistency,
) -> SearchResult:
    started = time.perf_counter()
    settings = elephant.settings.search
    expanding = settings.expand if request.expand is None else request.expand
    decomposing = settings.decompose if request.decompose is None else request.decompose
    subs, subs_from = _sub_queries(elephant, tenant, request.query) if decomposing else ([], None)
    variants = [request.query, *subs][: settings.max_variants]
    # Without expansion the question and its sub-queries are all the model needs: they
    # are embedded while the connection is taken and the graph lane's entities are read.
    early = None if expanding else _QUERY_EMBEDDING.submit(_embed_query, elephant, variants)
    with elephant.db.reading(tenant, consistency) as conn:
        engine = keyword_engine(elephant, conn)
        if expanding:
            names = elephant.names.get(conn, tenant)
            for variant in expand(request.query, names, max_variants=settings.max_variants):
                if len(variants) < settings.max_variants and variant not in variants:
                    variants.append(variant)
            for paraphrase in _paraphrases(elephant, tenant, request.query):
                if len(variants) < settings.max_variants and paraphrase not in variants:
                    variants.append(paraphrase)
        # With a token budget the budget is the cap; limit only when the caller gives one.
        limit = request.limit or (MAX_LIMIT if request.max_tokens else settings.default_limit)
        reranking = elephant.reranker is not None and (
            elephant.settings.reranker.enabled if request.rerank is None else request.rerank
        )
        diversifying = settings.diversify if request.diversify is None else request.diversify
        pool = min(200, limit * settings.diversity_pool) if diversifying else limit
        if reranking:
            pool = max(pool, elephant.settings.reranker.pool)
        named: list[str] = []
        neighbours: list[str] = []
        if _lane_sizes(elephant, request)["graph"] > 0:
            named, neighbours = lane_entities(elephant, conn, tenant, request.query)
        vectors, embed_ms = (
            early.result() if early is not None else _embed_query(elephant, variants)
        )
        dates = _question_dates(request, settings.date_weight)
        params = statement_params(
            elephant,
            request,
            variants,
            vectors,
            engine,
            pool,
            tenant=tenant,
            way=_way(elephant, conn, tenant, request),
            graph=(named, neighbours),
            dates=dates,
        )
        lanes = {key: params[key] for key in STATEMENT_SIZES}
        prepare(conn, elephant, max(lanes["windows"], lanes["facts"]), params["way"])
        sql_started = time.perf_counter()
        rows = run_statement(conn, engine, params)
        sql_ms = (time.perf_counter() - sql_started) * 1000
        hits = [_hit(row) for row in rows]
        replaced = superseded(conn, tenant, hits)
    # Each rule below that moves a result sets the score it shows (ordering.py).
    present = about_the_present(request.filters.as_of, request.filters.include_expired)
    rerank_report = RerankReport(used=False, reason="off")
    if reranking and hits:
        hits, rerank_report = _rerank(elephant, request.query, hits)
        hits = reranked(hits) if rerank_report.used else hits
    hits = one_place(marked(hits, replaced))
    if diversifying:
        hits = settled(new_turns_first(hits, lambda hit: hit.source_turn_ids))
    if settings.keyword_first_within and not rerank_report.used:
        lifts = keyword_best_first(
            hits,
            settings.keyword_first_within,
            lambda hit: _keyword_best(hit) and not (present and is_superseded(hit)),
            lambda hit: hit.prior,
        )
        hits = lifted(hits, lifts)
    if present:
        hits = below_successors(hits, replaced)
    if request.max_tokens:
        hits = within_budget(
            hits, request.max_tokens, lambda hit: hit.text, lambda hit: hit.source_turn_ids
        )
    hits = hits[:limit]
    if record_access:
        record_hits(elephant, tenant, hits)
    result = SearchResult(query=request.query, hits=hits, variants=variants)
    rerank_ms = rerank_report.elapsed_ms if isinstance(rerank_report.elapsed_ms, float) else None
    metrics.record_search(len(variants), embed_ms, sql_ms, rerank_ms, started)
    if request.explain:
        result.explain = SearchExplain(
            variants=variants,
            sub_queries=[sub for sub in subs if sub in variants],
            sub_queries_from=subs_from,
            max_tokens=request.max_tokens,
            tokens=sum(estimated_tokens(hit.text) for hit in hits),
            lanes=lanes,
            keyword_engine=engine,
            vector_way=params["way"],
            graph=GraphLaneReport(named=named, neighbours=neighbours),
            reranker=rerank_report,
            rrf_k=settings.rrf_k,
            diversified=diversifying,
            pool=pool,
            recency_prior=RecencyPrior(
                weight=params["recency_weight"],
                half_life_days=settings.half_life_days,
                on=params["recency_weight"] > 0,
            ),
            date_prior=None
            if dates is None
            else DatePrior(dates.phrases, dates.after, dates.before, settings.date_weight),
            activation_prior=ActivationPrior(
                weight=params["activation_weight"],
                half_life_days=params["activation_half_life_days"],
                importance_factor=params["activation_importance_factor"],
                access_boost=params["activation_access_boost"],
                on=params["activation_weight"] > 0,
            ),
            timings_ms=SearchTimings(
                embedding=round(embed_ms, 2),
                sql=round(sql_ms, 2),
                total=round((time.perf_counter() - started) * 1000, 2),
            ),
        )
    return result


_QUERY_EMBEDDING = ThreadPoolExecutor(max_workers=4, thread_name_prefix="query-embedding")


def _way(elephant: Elephant, conn: Connection, tenant: str, request: SearchRequest) -> Way:
    """Store items under a namespace are a small part of a tenant: read exactly (an
    approximate index would stop short of them under so selective a filter)."""
    if request.filters.item_namespace_text() is not None:
        return "exact"
    return elephant.vector_ways.get(conn, tenant)


def _sub_queries(elephant: Elephant, tenant: str, query: str) -> tuple[list[str], str | None]:
    """The question's sub-queries and who wrote them ("llm", "rules"; None: there are none).
    The LLM's usage is queued for the primary (a search may run on a replica)."""
    if elephant.llm is not None and elephant.settings.search.decompose_llm:
        found, usage, error = elephant.sub_queries.get(elephant.llm, tenant, query)
        if usage is not None:
            elephant.access.usage(tenant, "decompose", usage, ok=error is None, error=error)
        if found is not None:
            return found, "llm" if found else None
    found = sub_queries(query)
    return found, "rules" if found else None


def _keyword_best(hit: SearchHit) -> bool:
    """The keyword lane's first memory (window or note) of some variant."""
    return hit.kind != "fact" and rank_in(hit.ranks, "keyword") == 1


def _embed_query(elephant: Elephant, variants: list[str]) -> tuple[Any, float]:
    """The variants' vectors and the milliseconds the embedder took."""
    embed_started = time.perf_counter()
    vectors = elephant.embedder.embed_queries(variants)
    return vectors, (time.perf_counter() - embed_started) * 1000


def _question_dates(request: SearchRequest, weight: float) -> QuestionDates | None:
    """The span the question names, when the date prior is on (weight > 0)."""
    return question_dates(request.query, request.asked_at) if weight else None


def statement_params(
    elephant: Elephant,
    request: SearchRequest,
    variants: list[str],
    vectors: Any,
    engine: str,
    result_limit: int | None = None,
    *,
    tenant: str,
    way: Way = "exact",
    graph: tuple[list[str], list[str]] = ([], []),
    dates: QuestionDates | Literal["from request"] | None = "from request",
) -> dict[str, Any]:
    """Every parameter of sql/retrieval/hybrid_search.sql for this request.

    ``way``: how the tenant's dense lanes are served (app/db/tenant_indexes.py); exact
    is right for any tenant, only slower for a big one. ``graph``: the entity keys the
    query names and their 1-hop neighbours. ``dates``:
    the span the question names, if the caller has read it already (search() does, for
    its explain), else read here.
    """
    settings = elephant.settings.search
    lanes = _lane_sizes(elephant, request)
    named, neighbours = graph
    if not neighbours:
        lanes["graph"] = 0  # no neighbour of a named entity: the lane has nothing to add
    structure = structure_lane_params(settings, request.query, lanes, request.lanes)
    filters = request.filters
    memory_kinds = sorted(filters.kinds() & {"window", "note"})
    if dates == "from request":
        dates = _question_dates(request, settings.date_weight)
    return {
        "tenant": tenant,
        "exact": way == "exact",
        "way": way,  # not a statement parameter: run_statement picks the text by it
        "vectors": list(vectors),
        "texts": variants if engine == "bm25" else [keyword_text(v) for v in variants],
        **lanes,
        **(_keyword_pools(settings, lanes) if engine == "bm25" else {}),
        # not a statement parameter: run_statement picks the keyword lane by it
        "keyword_statistics": settings.keyword_statistics,
        "rrf_k": settings.rrf_k,
        "variant_weights": [1.0] + [settings.variant_weight] * (len(variants) - 1),
        **weight_parameters(settings),
        "expansion_seeds": settings.expansion_seeds,
        **entity_lane_params(settings, request.query, lanes),
        **structure,
        "passage_share": settings.passage_share,
        # at most the lane's size: a windows lane of size 0 stays off
        "passage_candidates": min(settings.passage_candidates, lanes["windows"]),
        "seen_chars": elephant.settings.embedding.max_length * CHARS_PER_TOKEN,
        "preference_min_similarity": settings.preference_min_similarity,
        "graph_named": named,
        "graph_neighbours": neighbours,
        "result_limit": result_limit or request.limit or settings.default_limit,
        "sources": filters.sources(),
        "memory_kinds": None if len(memory_kinds) == 2 else memory_kinds,
        "created_after": filters.created_after,
        "created_before": filters.created_before,
        "event_after": filters.event_after,
        "event_before": filters.event_before,
        "as_of": filters.as_of,
        "include_expired": filters.include_expired,
        "item_namespace": filters.item_namespace_text(),
        "item_value": None if filters.item_value is None else json.dumps(filters.item_value),
        "recency_weight": (
            settings.recency_weight if request.recency_weight is None else request.recency_weight
        ),
        "half_life_days": settings.half_life_days,
        "date_after": dates.after if dates else None,
        "date_before": dates.before if dates else None,
        "date_weight": settings.date_weight,
        "assistant_fact_weight": settings.assistant_fact_weight,
        "fact_support": settings.fact_support,
        "activation_weight": (
            elephant.settings.lifecycle.search_weight
            if request.activation_weight is None
            else request.activation_weight
        ),
        **ActivationParams.of(elephant.settings.lifecycle).sql_args(),
    }


def _keyword_pools(settings: SearchSettings, lanes: dict[str, int]) -> dict[str, int]:
    """How many of the index's best candidates the tenant-statistics BM25 lane rescores,
    per table: search.keyword_pool, at least the lane's size, 0 when the lane is off."""
    if settings.keyword_statistics != "tenant":
        return {}
    return {
        f"keyword_{part}_pool": max(settings.keyword_pool, size) if size else 0
        for part, size in (("memory", lanes["keyword_memories"]), ("fact", lanes["keyword_facts"]))
    }


def prepare(conn: Connection, elephant: Elephant, largest_lane: int, way: Way = "exact") -> None:
    """Transaction-local planner settings every lane depends on (see the module docstring),
    in one round trip. With search.generic_plan the statement is planned once per
    connection (a server-side prepared statement with a generic plan): every lane is an
    ordered index scan whatever the parameter values, and planning was ~2.4 ms of each
    search at 100k memories. Not for a tenant on its own indexes: its statement names
    the tenant, whose statistics (half a table, say) make the generic plan's estimates
    of every parameterised LIMIT huge; measured at 100k, idle: 49-66 ms generic against
    20.5 ms executing + 19 ms planning custom."""
    iterative = "strict_order" if _vector_version(elephant) >= (0, 8) else "off"
    generic = elephant.settings.search.generic_plan and way != "own"
    plan_mode = "force_generic_plan" if generic else "auto"
    conn.execute(
        "SELECT set_config('hnsw.ef_search', %s, true), set_config('enable_sort', 'off', true),"
        " set_config('plan_cache_mode', %s, true)"
        + (", set_config('hnsw.iterative_scan', %s, true)" if iterative != "off" else ""),
        (str(max(MIN_EF_SEARCH, largest_lane)), plan_mode)
        + ((iterative,) if iterative != "off" else ()),
    )


def run_statement(conn: Connection, engine: str, params: dict[str, Any]) -> list[Any]:
    """The search statement as a server-side prepared statement (psycopg keeps one per
    connection and statement text), so prepare()'s plan mode applies to it. Rows are
    named tuples: read by column name (kind and id come first)."""
    own = params["tenant"] if params.get("way") == "own" else None
    text = statement(engine, own, params.get("keyword_statistics", "tenant"))
    with conn.cursor(row_factory=namedtuple_row) as cursor:
        return cursor.execute(text, params, prepare=True).fetchall()


def _hit(row: Any) -> SearchHit:
    """A SearchHit from one row of the statement (a named tuple)."""
    return SearchHit(
        id=str(row.id),
        kind=row.kind,
        text=row.text,
        source=row.source,
        score=float(row.score),
        created_at=row.created_at,
        event_at=row.event_at,
        valid_to=row.valid_to,
        subject=row.subject,
        status=row.fact_status,
        memory_id=str(row.memory_id) if row.memory_id else None,
        source_turn_ids=list(row.source_turn_ids or []),
        importance=float(row.importance),
        ranks=ranks_of(row.ranks),
        rrf=float(row.rrf),
        prior=float(row.prior),
        variants=sorted(int(v) for v in row.variants),
        activation=float(row.activation),
    )


def rerank_document(hit: SearchHit) -> str:
    """What the reranker reads: the date and source give it temporal and provenance cues."""
    when = hit.event_at or hit.created_at
    return f"[{when:%Y-%m-%d}] ({hit.source or hit.kind}) {hit.text}"


def _rerank(
    elephant: Elephant, query: str, hits: list[SearchHit]
) -> tuple[list[SearchHit], RerankReport]:
    """Reorder the fused pool; on any reranker failure keep the fused order and say why."""
    assert elephant.reranker is not None
    try:
        reranked = elephant.reranker.rerank(query, [rerank_document(hit) for hit in hits])
    except RerankerError as exc:
        return hits, RerankReport(used=False, fallback="fused order", reason=exc.message)
    ordered = [
        msgspec.structs.replace(hits[index], rerank_score=score) for index, score in reranked.order
    ]
    report = RerankReport(
        used=True, model=reranked.model, pool=len(hits), elapsed_ms=round(reranked.elapsed_ms, 2)
    )
    return ordered, report


def record_hits(elephant: Elephant, tenant: str, hits: list[SearchHit]) -> None:
    elephant.access.record(
        tenant,
        [hit.id for hit in hits if hit.kind != "fact"],
        [hit.id for hit in hits if hit.kind == "fact"],
    )
