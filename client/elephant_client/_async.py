"""The asynchronous client. ``_sync.py`` is generated from this file (``python -m
elephant_client._unasync``): edit here, then regenerate."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, Self, TypeVar, overload

import httpx

from elephant_client._core import (
    Call,
    Config,
    RetryPolicy,
    body,
    connection_error,
    error_from,
    json_of,
    make_config,
    params,
    retryable,
)
from elephant_client._decode import decode, decode_jobs, decode_page
from elephant_client._errors import InvalidResponse
from elephant_client._inputs import (
    Consistency,
    Entity,
    EntityObservations,
    Lanes,
    ObservationRefs,
    Relation,
    RelationRef,
    Scope,
    SearchFilters,
    Turn,
    When,
)
from elephant_client._models import (
    Admission,
    AnalystInfo,
    AuditEntry,
    CommitResult,
    Contradiction,
    ConversationResult,
    ConversationSummary,
    CreatedAnalyst,
    CreatedKey,
    EntitySummary,
    ErasureReport,
    Fact,
    FactHistory,
    FeedbackResult,
    GateDecision,
    GateMetrics,
    GateThreshold,
    GraphChange,
    GraphNode,
    GraphWrite,
    Handoff,
    Health,
    ItemDeleted,
    ItemHistory,
    ItemPut,
    Job,
    JobsPage,
    KeyInfo,
    Memory,
    Neighbourhood,
    NodeSearch,
    OpenedNodes,
    Owner,
    Page,
    Reflection,
    SearchResult,
    SessionClosed,
    Stats,
    StoreItem,
    Suggestions,
    Transcript,
    UsageReport,
)

T = TypeVar("T")
PAGE_SIZE = 100


class AsyncElephant:
    """Asynchronous client of the Elephant REST API.

    ``base_url`` defaults to ELEPHANT_URL, then http://127.0.0.1:7777; ``api_key`` (sent
    as a Bearer token) to ELEPHANT_API_KEY; ``tenant`` is sent as X-Elephant-Tenant
    (only an all-tenant key may name one; a tenant's key acts for its own). ``retry``
    says how 429, 503 and failed connections are retried (see ``RetryPolicy``).
    Use ``async with`` or call ``aclose()``.
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        tenant: str | None = None,
        timeout: float | httpx.Timeout = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._config: Config = make_config(base_url, api_key, tenant, timeout, retry)
        self._http = httpx.AsyncClient(
            base_url=self._config.base_url,
            headers=self._config.headers,
            timeout=self._config.timeout,
            transport=transport,
        )

    @property
    def base_url(self) -> str:
        return self._config.base_url

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._config.base_url!r})"

    # ------------------------------------------------------------ transport

    async def _send(self, call: Call) -> Any:
        """Send ``call``, retrying as ``retryable`` allows; the JSON answer or an error."""
        retry = 0
        while True:
            try:
                response = await self._http.send(call.request(self._http))
            except httpx.TransportError as exc:
                delay = self._config.retry.delay(retry, None)
                if delay is None or not retryable(call, None, exc):
                    raise connection_error(call, exc) from exc
            else:
                if response.status_code < 400 or response.status_code in call.ok:
                    return json_of(response)
                error = error_from(response)
                delay = self._config.retry.delay(retry, error.retry_after)
                if delay is None or not retryable(call, response.status_code):
                    raise error
            await asyncio.sleep(delay)
            retry += 1

    async def _walk(self, fetch: Callable[[str | None], Awaitable[Page[T]]]) -> AsyncIterator[T]:
        """Every item of every page, following ``next_cursor``."""
        cursor: str | None = None
        while True:
            page = await fetch(cursor)
            for item in page.items:
                yield item
            if page.next_cursor is None:
                return
            if page.next_cursor == cursor:
                raise InvalidResponse(f"the server returned the same cursor twice: {cursor!r}")
            cursor = page.next_cursor

    # ------------------------------------------------------------ health

    async def health(self) -> Health:
        """GET /health: database, schema and model; ``status`` unavailable comes back as a
        report (HTTP 503), not an exception."""
        return decode(Health, await self._send(Call("GET", "/health", ok=frozenset({503}))))

    # ------------------------------------------------------------ writes

    async def commit(
        self,
        text: str,
        *,
        source: str | None = None,
        importance: float | None = None,
        metadata: Mapping[str, Any] | None = None,
        occurred_at: When | None = None,
        subject: str | None = None,
        force: bool = False,
        wait: bool = False,
    ) -> CommitResult:
        """POST /commit: store a note (gated, deduplicated). ``wait``: extract its facts
        now. Retried on 503: a repeat of a stored text is answered ``duplicate``
        with ``memory_id`` the memory the first attempt stored."""
        note = body(
            text=text,
            source=source,
            importance=importance,
            metadata=metadata,
            occurred_at=occurred_at,
            subject=subject,
            force=force or None,
        )
        call = Call("POST", "/commit", params(wait=wait or None), note)
        return decode(CommitResult, await self._send(call))

    async def commit_conversation(
        self,
        turns: Sequence[Turn],
        *,
        conversation_id: str | None = None,
        session_date: When | None = None,
        source: str | None = None,
        window_size: int | None = None,
        stride: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        force: bool = False,
        wait: bool = False,
    ) -> ConversationResult:
        """POST /commit_conversation: raw turns plus gated overlapping windows. Not
        retried on 503 (a repeat would append the turns again)."""
        conversation = body(
            turns=list(turns),
            conversation_id=conversation_id,
            session_date=session_date,
            source=source,
            window_size=window_size,
            stride=stride,
            metadata=metadata,
            force=force or None,
        )
        call = Call("POST", "/commit_conversation", params(wait=wait or None), conversation, False)
        return decode(ConversationResult, await self._send(call))

    async def feedback(
        self, *, helpful: bool, memory_id: str | None = None, fact_id: str | None = None
    ) -> FeedbackResult:
        """POST /feedback: mark a memory or a fact helpful or not (moves its importance;
        not retried on 503)."""
        mark = body(memory_id=memory_id, fact_id=fact_id, helpful=helpful)
        call = Call("POST", "/feedback", body=mark, retry_safe=False)
        return decode(FeedbackResult, await self._send(call))

    async def gate_metrics(self, *, recent: int | None = None) -> GateMetrics:
        """GET /amac/metrics: admission-gate counts, scores and recent rejections."""
        call = Call("GET", "/amac/metrics", params(recent=recent))
        return decode(GateMetrics, await self._send(call))

    async def set_gate_threshold(self, threshold: float | None) -> GateThreshold:
        """PUT /amac/threshold (admin): this tenant's gate threshold; None: the default."""
        call = Call("PUT", "/amac/threshold", body={"threshold": threshold})
        return decode(GateThreshold, await self._send(call))

    async def gate_decisions(
        self,
        *,
        decision: Literal["accepted", "rejected", "forced", "duplicate"] | None = None,
        kind: Literal["note", "window"] | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page[GateDecision]:
        """GET /amac/decisions: one page of the gate's decisions, newest first (a rejected
        text whole, in ``rejected_text``, until it is admitted)."""
        query = params(decision=decision, kind=kind, limit=limit, cursor=cursor)
        return decode_page(GateDecision, await self._send(Call("GET", "/amac/decisions", query)))

    def iter_gate_decisions(
        self,
        *,
        decision: Literal["accepted", "rejected", "forced", "duplicate"] | None = None,
        kind: Literal["note", "window"] | None = None,
        page_size: int = PAGE_SIZE,
    ) -> AsyncIterator[GateDecision]:
        """Every gate decision matching the filters, newest first, a page at a time."""
        return self._walk(
            lambda cursor: self.gate_decisions(
                decision=decision, kind=kind, limit=page_size, cursor=cursor
            )
        )

    async def admit_decision(self, decision_id: int) -> Admission:
        """POST /amac/decisions/{id}/admit: store a rejected note after all (forced), once:
        Conflict when it was admitted already. ``status`` is stored (HTTP 201), or
        duplicate (200) when the same text was stored since. Not retried on 503 (a
        repeat would be answered Conflict)."""
        call = Call("POST", f"/amac/decisions/{int(decision_id)}/admit", retry_safe=False)
        return decode(Admission, await self._send(call))

    # ------------------------------------------------------------ search

    async def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        filters: SearchFilters | None = None,
        expand: bool | None = None,
        explain: bool = False,
        lanes: Lanes | None = None,
        recency_weight: float | None = None,
        asked_at: When | None = None,
        rerank: bool | None = None,
        diversify: bool | None = None,
        consistency: Consistency | None = None,
        max_tokens: int | None = None,
        decompose: bool | None = None,
    ) -> SearchResult:
        """POST /search: hybrid search (every option; GET /search takes a subset).
        ``consistency="primary"`` sees your own write of a moment ago on a replica set;
        ``max_tokens`` fills a token budget instead of a count."""
        request = body(
            query=query,
            limit=limit,
            filters=filters,
            expand=expand,
            explain=explain or None,
            lanes=lanes,
            recency_weight=recency_weight,
            asked_at=asked_at,
            rerank=rerank,
            diversify=diversify,
            consistency=consistency,
            max_tokens=max_tokens,
            decompose=decompose,
        )
        return decode(SearchResult, await self._send(Call("POST", "/search", body=request)))

    async def reflect(
        self,
        query: str,
        *,
        limit: int | None = None,
        filters: SearchFilters | None = None,
        consistency: Consistency | None = None,
    ) -> Reflection:
        """POST /reflect: an answer from memory citing its sources (``answer`` is None
        when the server has no LLM: the sources are still returned)."""
        request = body(query=query, limit=limit, filters=filters, consistency=consistency)
        return decode(Reflection, await self._send(Call("POST", "/reflect", body=request)))

    async def proactive(
        self, messages: Sequence[str], *, max_results: int | None = None
    ) -> Suggestions:
        """POST /proactive: memories worth raising given the recent messages."""
        request = body(messages=list(messages), max_results=max_results)
        return decode(Suggestions, await self._send(Call("POST", "/proactive", body=request)))

    async def stats(self) -> Stats:
        """GET /stats: counts by kind and source, sizes, index state."""
        return decode(Stats, await self._send(Call("GET", "/stats")))

    async def usage(self, *, days: int | None = None) -> UsageReport:
        """GET /usage: LLM calls, failures, tokens, latency and cost of the last ``days``
        UTC days (1-365, today included), by day and operation."""
        return decode(UsageReport, await self._send(Call("GET", "/usage", params(days=days))))

    # ------------------------------------------------------------ contradictions, jobs

    async def contradictions(
        self, *, limit: int | None = None, cursor: str | None = None
    ) -> Page[Contradiction]:
        """GET /contradictions: one page, newest first."""
        call = Call("GET", "/contradictions", params(limit=limit, cursor=cursor))
        return decode_page(Contradiction, await self._send(call))

    def iter_contradictions(self, *, page_size: int = PAGE_SIZE) -> AsyncIterator[Contradiction]:
        """Every contradiction, newest first, a page at a time."""
        return self._walk(lambda cursor: self.contradictions(limit=page_size, cursor=cursor))

    async def jobs(
        self,
        *,
        status: Literal["queued", "running", "done", "failed"] | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> JobsPage:
        """GET /jobs (admin): one page of the tenant's background jobs, with counts."""
        call = Call("GET", "/jobs", params(status=status, limit=limit, cursor=cursor))
        return decode_jobs(await self._send(call))

    def iter_jobs(
        self,
        *,
        status: Literal["queued", "running", "done", "failed"] | None = None,
        page_size: int = PAGE_SIZE,
    ) -> AsyncIterator[Job]:
        return self._walk(lambda cursor: self.jobs(status=status, limit=page_size, cursor=cursor))

    # ------------------------------------------------------------ memories

    async def memories(
        self,
        *,
        kind: Literal["note", "window"] | None = None,
        source: str | None = None,
        conversation: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page[Memory]:
        """GET /memories: one page, newest first."""
        query = params(
            kind=kind, source=source, conversation=conversation, limit=limit, cursor=cursor
        )
        return decode_page(Memory, await self._send(Call("GET", "/memories", query)))

    def iter_memories(
        self,
        *,
        kind: Literal["note", "window"] | None = None,
        source: str | None = None,
        conversation: str | None = None,
        page_size: int = PAGE_SIZE,
    ) -> AsyncIterator[Memory]:
        """Every memory matching the filters, newest first, a page at a time."""
        return self._walk(
            lambda cursor: self.memories(
                kind=kind,
                source=source,
                conversation=conversation,
                limit=page_size,
                cursor=cursor,
            )
        )

    async def get_memory(self, memory_id: str) -> Memory:
        """GET /memories/{id}. NotFound when it is not in this tenant."""
        return decode(Memory, await self._send(Call("GET", f"/memories/{_id(memory_id)}")))

    async def update_memory(
        self,
        memory_id: str,
        *,
        importance: float | None = None,
        source: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Memory:
        """PATCH /memories/{id}: change importance, source (its facts follow) or metadata
        (merged key by key; a key set to None is removed); the rest stays. The text is
        evidence and does not change: commit a corrected note instead."""
        change = body(importance=importance, source=source, metadata=metadata)
        call = Call("PATCH", f"/memories/{_id(memory_id)}", body=change)
        return decode(Memory, await self._send(call))

    async def delete_memory(self, memory_id: str) -> ErasureReport:
        """DELETE /memories/{id} (admin): the memory and what was derived from it."""
        call = Call("DELETE", f"/memories/{_id(memory_id)}")
        return decode(ErasureReport, await self._send(call))

    # ------------------------------------------------------------ facts

    async def facts(
        self,
        *,
        status: Literal["active", "superseded", "retracted"] | None = None,
        source: str | None = None,
        memory_id: str | None = None,
        subject: str | None = None,
        fact_type: Literal["world", "experience", "inference"] | None = None,
        as_of: When | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page[Fact]:
        """GET /facts: one page, newest first; ``as_of``: the facts true then."""
        query = params(
            status=status,
            source=source,
            memory_id=memory_id,
            subject=subject,
            fact_type=fact_type,
            as_of=as_of,
            limit=limit,
            cursor=cursor,
        )
        return decode_page(Fact, await self._send(Call("GET", "/facts", query)))

    def iter_facts(
        self,
        *,
        status: Literal["active", "superseded", "retracted"] | None = None,
        source: str | None = None,
        memory_id: str | None = None,
        subject: str | None = None,
        fact_type: Literal["world", "experience", "inference"] | None = None,
        as_of: When | None = None,
        page_size: int = PAGE_SIZE,
    ) -> AsyncIterator[Fact]:
        """Every fact matching the filters, newest first, a page at a time."""
        return self._walk(
            lambda cursor: self.facts(
                status=status,
                source=source,
                memory_id=memory_id,
                subject=subject,
                fact_type=fact_type,
                as_of=as_of,
                limit=page_size,
                cursor=cursor,
            )
        )

    async def get_fact(self, fact_id: str) -> Fact:
        """GET /facts/{id}. NotFound when it is not in this tenant."""
        return decode(Fact, await self._send(Call("GET", f"/facts/{_id(fact_id)}")))

    async def fact_history(self, fact_id: str) -> FactHistory:
        """GET /facts/{id}/history: the fact's chain (what it replaced, what replaced it)
        and the contradictions along it. NotFound when it is not in this tenant."""
        call = Call("GET", f"/facts/{_id(fact_id)}/history")
        return decode(FactHistory, await self._send(call))

    async def delete_fact(self, fact_id: str) -> ErasureReport:
        """DELETE /facts/{id} (admin): the fact with its links."""
        call = Call("DELETE", f"/facts/{_id(fact_id)}")
        return decode(ErasureReport, await self._send(call))

    async def erase(
        self,
        *,
        subject: str | None = None,
        aliases: Sequence[str] | None = None,
        conversation_id: str | None = None,
        source: str | None = None,
        memory_ids: Sequence[str] | None = None,
        fact_ids: Sequence[str] | None = None,
        whole_tenant: bool = False,
        dry_run: bool = False,
    ) -> ErasureReport:
        """POST /erase (admin): name one target; ``dry_run`` reports what would go.
        ``whole_tenant`` erases every row of the tenant, its graph and its API keys."""
        target = body(
            tenant=whole_tenant or None,
            subject=subject,
            aliases=None if aliases is None else list(aliases),
            conversation_id=conversation_id,
            source=source,
            memory_ids=None if memory_ids is None else list(memory_ids),
            fact_ids=None if fact_ids is None else list(fact_ids),
            dry_run=dry_run or None,
        )
        return decode(ErasureReport, await self._send(Call("POST", "/erase", body=target)))

    # ------------------------------------------------------------ conversations, sessions

    async def conversations(
        self, *, source: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> Page[ConversationSummary]:
        """GET /conversations: one page, newest first."""
        query = params(source=source, limit=limit, cursor=cursor)
        return decode_page(
            ConversationSummary, await self._send(Call("GET", "/conversations", query))
        )

    def iter_conversations(
        self, *, source: str | None = None, page_size: int = PAGE_SIZE
    ) -> AsyncIterator[ConversationSummary]:
        """Every conversation (of ``source``), newest first, a page at a time."""
        return self._walk(
            lambda cursor: self.conversations(source=source, limit=page_size, cursor=cursor)
        )

    async def get_conversation(self, conversation_id: str) -> Transcript:
        """GET /conversations/{id}: every turn, the windows with the gate's decisions, the
        handoffs. ``conversation_id``: its id or the one it was committed with (one
        holding / ? # or % is refused here: use its id); NotFound when it is not in this
        tenant."""
        call = Call("GET", f"/conversations/{_id(conversation_id)}")
        return decode(Transcript, await self._send(call))

    async def close_session(
        self,
        project: str,
        *,
        transcript: str | None = None,
        turns: Sequence[Turn] | None = None,
        session_date: When | None = None,
        conversation_id: str | None = None,
        source: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        wait: bool = True,
    ) -> SessionClosed:
        """POST /sessions/close: store the session (``transcript`` or ``turns``), extract
        its facts (``wait``) and write the project's handoff. Not retried on 503."""
        session = body(
            project=project,
            transcript=transcript,
            turns=None if turns is None else list(turns),
            session_date=session_date,
            conversation_id=conversation_id,
            source=source,
            metadata=metadata,
        )
        call = Call("POST", "/sessions/close", params(wait=wait), session, False)
        return decode(SessionClosed, await self._send(call))

    async def handoff(self, project: str) -> Handoff:
        """GET /handoff: the project's latest handoff (NotFound when there is none)."""
        call = Call("GET", "/handoff", params(project=project))
        return decode(Handoff, await self._send(call))

    async def handoffs(
        self, *, project: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> Page[Handoff]:
        """GET /handoffs: one page of the closed sessions' handoffs, newest first."""
        query = params(project=project, limit=limit, cursor=cursor)
        return decode_page(Handoff, await self._send(Call("GET", "/handoffs", query)))

    def iter_handoffs(
        self, *, project: str | None = None, page_size: int = PAGE_SIZE
    ) -> AsyncIterator[Handoff]:
        """Every handoff (of ``project``), newest first, a page at a time."""
        return self._walk(
            lambda cursor: self.handoffs(project=project, limit=page_size, cursor=cursor)
        )

    # ------------------------------------------------------------ graph writes

    async def graph_record(
        self,
        *,
        entities: Sequence[Entity] = (),
        relations: Sequence[Relation] = (),
        observations: Sequence[EntityObservations] = (),
    ) -> GraphWrite:
        """POST /graph/record: entities, relations and observations, all or none."""
        record = {
            "entities": list(entities),
            "relations": list(relations),
            "observations": list(observations),
        }
        return await self._graph_write("/graph/record", record)

    async def graph_decision(
        self,
        name: str,
        *,
        decided: str,
        because: str,
        rejected: Sequence[str] = (),
        domain: str | None = None,
        supersedes: str | None = None,
        epistemic: str | None = None,
    ) -> GraphWrite:
        """POST /graph/decisions: a decision, its reason and each rejected alternative."""
        decision = body(
            name=name,
            decided=decided,
            because=because,
            rejected=list(rejected),
            domain=domain,
            supersedes=supersedes,
            epistemic=epistemic,
        )
        return await self._graph_write("/graph/decisions", decision)

    async def graph_revise(
        self,
        entity: str,
        *,
        superseded_by: str,
        observations: Sequence[str] = (),
        superseding_entity: Entity | None = None,
        reason: str | None = None,
    ) -> GraphWrite:
        """POST /graph/revise: invalidate what is no longer true, link its replacement."""
        revision = body(
            entity=entity,
            superseded_by=superseded_by,
            observations=list(observations),
            superseding_entity=superseding_entity,
            reason=reason,
        )
        return await self._graph_write("/graph/revise", revision)

    async def graph_create_entities(self, entities: Sequence[Entity]) -> GraphWrite:
        """POST /graph/entities (existing ones are merged)."""
        return await self._graph_write("/graph/entities", {"entities": list(entities)})

    async def graph_create_relations(self, relations: Sequence[Relation]) -> GraphWrite:
        """POST /graph/relations: relate existing entities."""
        return await self._graph_write("/graph/relations", {"relations": list(relations)})

    async def graph_add_observations(
        self, observations: Sequence[EntityObservations]
    ) -> GraphWrite:
        """POST /graph/observations: add observations to existing entities."""
        request = {"observations": list(observations)}
        return await self._graph_write("/graph/observations", request)

    async def _graph_write(self, path: str, request: dict[str, Any]) -> GraphWrite:
        # Not retried on 503: decisions and revisions are not plain merges.
        return decode(GraphWrite, await self._send(Call("POST", path, None, request, False)))

    async def graph_invalidate_observations(
        self, observations: Sequence[ObservationRefs], *, reason: str | None = None
    ) -> GraphChange:
        """POST /graph/observations/invalidate: no longer true (kept, hidden from reads)."""
        request = body(observations=list(observations), reason=reason)
        return await self._graph_change("/graph/observations/invalidate", request)

    async def graph_invalidate_relations(self, relations: Sequence[RelationRef]) -> GraphChange:
        """POST /graph/relations/invalidate: valid_to set, edges kept."""
        request = {"relations": list(relations)}
        return await self._graph_change("/graph/relations/invalidate", request)

    async def graph_delete_entities(self, names: Sequence[str]) -> GraphChange:
        """POST /graph/entities/delete (admin): with their relations and observations."""
        return await self._graph_change("/graph/entities/delete", {"names": list(names)})

    async def graph_delete_observations(
        self, observations: Sequence[ObservationRefs]
    ) -> GraphChange:
        """POST /graph/observations/delete (admin; prefer invalidate)."""
        request = {"observations": list(observations)}
        return await self._graph_change("/graph/observations/delete", request)

    async def graph_delete_relations(self, relations: Sequence[RelationRef]) -> GraphChange:
        """POST /graph/relations/delete (admin)."""
        return await self._graph_change("/graph/relations/delete", {"relations": list(relations)})

    async def _graph_change(self, path: str, request: dict[str, Any]) -> GraphChange:
        # Invalidating or deleting twice leaves the same graph: retried on 503.
        return decode(GraphChange, await self._send(Call("POST", path, body=request)))

    # ------------------------------------------------------------ graph reads

    async def graph_search(
        self,
        query: str,
        *,
        domain: str | None = None,
        entity_type: str | None = None,
        limit: int | None = None,
        max_relations: int | None = None,
    ) -> NodeSearch:
        """GET /graph/search: entities matching a query, bounded."""
        query_params = params(
            query=query,
            domain=domain,
            entity_type=entity_type,
            limit=limit,
            max_relations=max_relations,
        )
        return decode(NodeSearch, await self._send(Call("GET", "/graph/search", query_params)))

    async def graph_open(self, names: Sequence[str], *, as_of: When | None = None) -> OpenedNodes:
        """POST /graph/open: named entities with relations and active observations
        (as they were at ``as_of``)."""
        request = body(names=list(names), as_of=as_of)
        return decode(OpenedNodes, await self._send(Call("POST", "/graph/open", body=request)))

    @overload
    async def graph_entities(
        self, *, summary: Literal[True] = ..., limit: int | None = ..., cursor: str | None = ...
    ) -> Page[EntitySummary]: ...

    @overload
    async def graph_entities(
        self, *, summary: Literal[False], limit: int | None = ..., cursor: str | None = ...
    ) -> Page[GraphNode]: ...

    async def graph_entities(
        self, *, summary: bool = True, limit: int | None = None, cursor: str | None = None
    ) -> Page[EntitySummary] | Page[GraphNode]:
        """GET /graph/entities: one page of the graph in name order; ``summary``: counts
        only, else each entity with its observations and relations."""
        call = Call("GET", "/graph/entities", params(summary=summary, limit=limit, cursor=cursor))
        data = await self._send(call)
        if summary:
            return decode_page(EntitySummary, data)
        return decode_page(GraphNode, data)

    def iter_graph_entities(self, *, page_size: int = PAGE_SIZE) -> AsyncIterator[EntitySummary]:
        """Every entity (counts only), in name order."""
        return self._walk(lambda cursor: self.graph_entities(limit=page_size, cursor=cursor))

    async def graph_neighbourhood(
        self, query: str | None = None, *, limit: int | None = None, hops: int | None = None
    ) -> Neighbourhood:
        """GET /graph: nodes and edges within ``hops`` of the entities ``query`` names."""
        call = Call("GET", "/graph", params(query=query, limit=limit, hops=hops))
        return decode(Neighbourhood, await self._send(call))

    # ------------------------------------------------------------ keys, audit (admin)

    async def create_key(
        self,
        *,
        tenant: str | None = None,
        all_tenants: bool = False,
        scopes: Sequence[Scope] | None = None,
        name: str | None = None,
        expires_in_days: float | None = None,
    ) -> CreatedKey:
        """POST /keys: a key for ``tenant`` (or an all-tenant operator key); ``key`` is
        shown this once. Not retried on 503 (a repeat would make a second key)."""
        request = body(
            tenant=tenant,
            all_tenants=all_tenants or None,
            scopes=None if scopes is None else list(scopes),
            name=name,
            expires_in_days=expires_in_days,
        )
        call = Call("POST", "/keys", body=request, retry_safe=False)
        return decode(CreatedKey, await self._send(call))

    async def keys(
        self,
        *,
        include_revoked: bool = False,
        all_tenants: bool = False,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page[KeyInfo]:
        """GET /keys: this tenant's keys (every tenant's: all-tenant keys only)."""
        query = params(
            include_revoked=include_revoked or None,
            all_tenants=all_tenants or None,
            limit=limit,
            cursor=cursor,
        )
        return decode_page(KeyInfo, await self._send(Call("GET", "/keys", query)))

    def iter_keys(
        self,
        *,
        include_revoked: bool = False,
        all_tenants: bool = False,
        page_size: int = PAGE_SIZE,
    ) -> AsyncIterator[KeyInfo]:
        return self._walk(
            lambda cursor: self.keys(
                include_revoked=include_revoked,
                all_tenants=all_tenants,
                limit=page_size,
                cursor=cursor,
            )
        )

    async def revoke_key(self, prefix: str, *, all_tenants: bool = False) -> KeyInfo:
        """POST /keys/{prefix}/revoke: the key stops working at its next request. An
        all-tenant key revokes only a key of the tenant it acts for, unless
        ``all_tenants`` (any tenant's key, or an all-tenant key)."""
        query = params(all_tenants=all_tenants or None)
        call = Call("POST", f"/keys/{_id(prefix)}/revoke", query)
        return decode(KeyInfo, await self._send(call))

    async def create_analyst(
        self, name: str, *, tenants: Sequence[str], statement_timeout_seconds: int | None = None
    ) -> CreatedAnalyst:
        """POST /analysts: a read-only SQL login for ``tenants``; ``password`` is shown this
        once. Not retried on 503 (a repeat would be refused as a duplicate)."""
        request = body(
            name=name, tenants=list(tenants), statement_timeout_seconds=statement_timeout_seconds
        )
        call = Call("POST", "/analysts", body=request, retry_safe=False)
        return decode(CreatedAnalyst, await self._send(call))

    async def analysts(self, *, all_tenants: bool = False) -> list[AnalystInfo]:
        """GET /analysts: the analysts of this tenant (every one: all-tenant keys only)."""
        query = params(all_tenants=all_tenants or None)
        data = await self._send(Call("GET", "/analysts", query))
        return decode(list[AnalystInfo], data.get("items") if isinstance(data, dict) else data)

    async def revoke_analyst(self, name: str, *, all_tenants: bool = False) -> AnalystInfo:
        """POST /analysts/{name}/revoke: its role is dropped; it cannot log in again."""
        query = params(all_tenants=all_tenants or None)
        call = Call("POST", f"/analysts/{_id(name)}/revoke", query)
        return decode(AnalystInfo, await self._send(call))

    async def audit(
        self, *, all_tenants: bool = False, limit: int | None = None, cursor: str | None = None
    ) -> Page[AuditEntry]:
        """GET /audit: the audit log, newest first."""
        query = params(all_tenants=all_tenants or None, limit=limit, cursor=cursor)
        return decode_page(AuditEntry, await self._send(Call("GET", "/audit", query)))

    def iter_audit(
        self, *, all_tenants: bool = False, page_size: int = PAGE_SIZE
    ) -> AsyncIterator[AuditEntry]:
        return self._walk(
            lambda cursor: self.audit(all_tenants=all_tenants, limit=page_size, cursor=cursor)
        )

    # ------------------------------------------------------------ store

    async def store_put(
        self,
        namespace: Sequence[str],
        key: str,
        value: Mapping[str, Any],
        *,
        text: str | None = None,
        source: str | None = None,
        subject: str | None = None,
        wait: bool = False,
    ) -> ItemPut:
        """PUT /store/items: a new version of the item; the one before stays as history
        and leaves search. ``text``: what is indexed (default: the value's strings).
        Not retried on 503 (a repeat would add a version)."""
        item = body(
            namespace=list(namespace),
            key=key,
            value=dict(value),
            text=text,
            source=source,
            subject=subject,
        )
        call = Call("PUT", "/store/items", params(wait=wait or None), item, False)
        return decode(ItemPut, await self._send(call))

    async def store_get(self, namespace: Sequence[str], key: str) -> StoreItem:
        """GET /store/items: the item's current version (NotFound when there is none)."""
        call = Call("GET", "/store/items", _item_ref(namespace, key))
        return decode(StoreItem, await self._send(call))

    async def store_delete(self, namespace: Sequence[str], key: str) -> ItemDeleted:
        """DELETE /store/items: the item leaves search; its versions stay as history."""
        call = Call("DELETE", "/store/items", _item_ref(namespace, key))
        return decode(ItemDeleted, await self._send(call))

    async def store_history(self, namespace: Sequence[str], key: str) -> ItemHistory:
        """GET /store/items/history: every version of the item, oldest first."""
        call = Call("GET", "/store/items/history", _item_ref(namespace, key))
        return decode(ItemHistory, await self._send(call))

    async def store_search(
        self,
        namespace_prefix: Sequence[str] = (),
        *,
        query: str | None = None,
        filter: Mapping[str, Any] | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> list[StoreItem]:
        """POST /store/search: items under the prefix whose value contains ``filter``,
        by hybrid search for ``query`` (with scores), else the newest first."""
        request = body(
            namespace_prefix=list(namespace_prefix),
            query=query,
            filter=None if filter is None else dict(filter),
            limit=limit,
            offset=offset,
        )
        found = await self._send(Call("POST", "/store/search", body=request))
        return decode(list[StoreItem], found.get("items") if isinstance(found, dict) else found)

    async def store_namespaces(
        self,
        *,
        prefix: Sequence[str] | None = None,
        suffix: Sequence[str] | None = None,
        max_depth: int | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> list[list[str]]:
        """POST /store/namespaces: the namespaces holding items ("*" matches any label)."""
        request = body(
            prefix=None if prefix is None else list(prefix),
            suffix=None if suffix is None else list(suffix),
            max_depth=max_depth,
            limit=limit,
            offset=offset,
        )
        found = await self._send(Call("POST", "/store/namespaces", body=request))
        names = found.get("namespaces") if isinstance(found, dict) else found
        return decode(list[list[str]], names)

    # ------------------------------------------------------------ tenant

    async def owner(self) -> Owner:
        """GET /tenant/owner: who "I" in this tenant's notes is."""
        return decode(Owner, await self._send(Call("GET", "/tenant/owner")))

    async def set_owner(self, owner: str | None) -> Owner:
        """PUT /tenant/owner (admin); None restores the setting's default."""
        call = Call("PUT", "/tenant/owner", body={"owner": owner})
        return decode(Owner, await self._send(call))


def _item_ref(namespace: Sequence[str], key: str) -> dict[str, Any]:
    """A store item's namespace and key as query parameters (labels joined by '.',
    which no label may hold)."""
    labels = [str(label) for label in namespace]
    if not labels or any("." in label for label in labels):
        raise ValueError(f"not a namespace (labels, none holding '.'): {namespace!r}")
    return {"namespace": ".".join(labels), "key": key}


def _id(value: str) -> str:
    """A path segment: ids and prefixes are plain, anything else is refused here rather
    than sent to another path."""
    text = str(value)
    if not text or any(ch in text for ch in "/?#%") or text in (".", ".."):
        raise ValueError(f"not an id: {value!r}")
    return text
