"""Graph reads, each bounded: search_nodes, open_nodes, read_graph and the neighbourhood view.

Every answer says how much it left out (total_matched, truncated, relations_total)
so an agent knows when to page or narrow instead of assuming it saw everything.
read_graph pages by keyset cursor (the last entity key of a page): entities added
or deleted between two pages neither repeat nor skip one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from app.db.resources import load_sql
from app.db.runtime import Connection
from app.errors import InvalidInput
from app.services.common import paging
from app.services.common.inputs import require_text
from app.services.graph import vocabulary as vocab
from app.services.graph.models import (
    EntitySummary,
    GraphEntity,
    GraphNode,
    GraphRelation,
    GraphResult,
    Neighbourhood,
    NodeSearchResult,
    OpenedNodes,
)
from app.services.graph.operations import active_observations, graph_store
from app.services.graph.store import Entity, GraphStore, Relation, entity_key, find
from app.services.runtime import Elephant

MAX_LIMIT = 200
MAX_HOPS = 3
MAX_OFFSET = 10_000_000


def _bounded(value: int, name: str, low: int, high: int) -> int:
    if not low <= value <= high:
        raise InvalidInput(f"{name} must be between {low} and {high}, got {value}")
    return value


def _names(
    store: GraphStore, conn: Connection, tenant: str, relations: Sequence[Relation]
) -> dict[str, str]:
    keys = {r.source for r in relations} | {r.target for r in relations}
    return {key: entity.name for key, entity in store.entities(conn, tenant, sorted(keys)).items()}


def _instant(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _valid_at(props: Mapping[str, object], as_of: datetime) -> bool:
    start, end = props.get("valid_from"), props.get("valid_to")
    return (start is None or _instant(datetime.fromisoformat(str(start))) <= as_of) and (
        end is None or _instant(datetime.fromisoformat(str(end))) > as_of
    )


def _nodes(
    store: GraphStore,
    conn: Connection,
    tenant: str,
    entities: Sequence[Entity],
    *,
    max_relations: int,
    max_observations: int,
    as_of: datetime | None = None,
) -> list[GraphNode]:
    keys = [entity.key for entity in entities]
    observations = active_observations(conn, tenant, keys, as_of)
    if as_of is None:
        relations = store.relations(conn, tenant, keys, active_only=True)
    else:
        relations = [
            r
            for r in store.relations(conn, tenant, keys, active_only=False)
            if _valid_at(r.properties, as_of)
        ]
    names = _names(store, conn, tenant, relations)
    nodes = []
    for entity in entities:
        own = [r for r in relations if entity.key in (r.source, r.target)]
        notes = observations.get(entity.key, [])
        nodes.append(
            GraphNode.of(
                entity,
                observations=notes[:max_observations],
                observations_total=len(notes),
                relations=[GraphRelation.of(r, names) for r in own[:max_relations]],
                relations_total=len(own),
                relations_truncated=len(own) > max_relations,
            )
        )
    return nodes


def open_nodes(
    elephant: Elephant,
    tenant: str,
    names: Sequence[str],
    *,
    max_relations: int = 50,
    max_observations: int = 100,
    as_of: datetime | None = None,
) -> OpenedNodes:
    """Named entities with their active observations and relations; unknown names listed.

    ``as_of``: the graph as it was then: relations and observations valid at that
    instant, entities that existed (created before it, not yet superseded).
    """
    if not names:
        raise InvalidInput("names: give at least one entity name")
    for name in names:
        require_text("names", name)
    _bounded(len(names), "number of names", 1, MAX_LIMIT)
    store = graph_store(elephant)
    keys = [entity_key(name) for name in names]
    with elephant.db.reading(tenant) as conn:
        if not store.exists(conn, tenant):
            return OpenedNodes(entities=[], missing=list(names))
        found = store.entities(conn, tenant, keys)
        if as_of is not None:
            as_of = _instant(as_of)
            found = {k: e for k, e in found.items() if _valid_at(e.properties(), as_of)}
        ordered = [found[key] for key in dict.fromkeys(keys) if key in found]
        nodes = _nodes(
            store, conn, tenant, ordered, max_relations=max_relations,
            max_observations=max_observations, as_of=as_of,
        )  # fmt: skip
    missing = [name for name, key in zip(names, keys, strict=True) if key not in found]
    return OpenedNodes(entities=nodes, missing=missing)


def search_nodes(
    elephant: Elephant,
    tenant: str,
    query: str,
    *,
    domain: str | None = None,
    entity_type: str | None = None,
    limit: int = 10,
    max_relations: int = 10,
) -> NodeSearchResult:
    """Entities whose name matches the query, then entities whose observations match it."""
    require_text("query", query)
    require_text("domain", domain)
    require_text("entity_type", entity_type)
    text = entity_key(query)
    if not text:
        raise InvalidInput("query: give some text to search for")
    _bounded(limit, "limit", 1, MAX_LIMIT)
    _bounded(max_relations, "max_relations", 0, 500)
    store = graph_store(elephant)
    role = vocab.role(entity_type) if entity_type else None
    domain_name = vocab.domain(domain, elephant.settings.graph.domains) if domain else None
    vector = elephant.embedder.embed_queries([query])[0]
    with elephant.db.reading(tenant) as conn:
        if not store.exists(conn, tenant):
            return NodeSearchResult(query=query, entities=[], total_matched=0, truncated=False)
        by_name = find(store, conn, tenant, [text], domain=domain_name, role=role)
        by_name.sort(key=lambda e: (e.key != text, not e.key.startswith(text), e.key))
        by_observation = _observation_matches(conn, tenant, vector)
        extra = store.entities(
            conn, tenant, [k for k in by_observation if k not in {e.key for e in by_name}]
        )
        ranked = by_name + [
            extra[key] for key in by_observation
            if key in extra
            and (domain_name is None or extra[key].domain == domain_name)
            and (role is None or extra[key].role == role)
        ]  # fmt: skip
        page = ranked[:limit]
        nodes = _nodes(store, conn, tenant, page, max_relations=max_relations, max_observations=5)
    return NodeSearchResult(
        query=query, entities=nodes, total_matched=len(ranked), truncated=len(ranked) > limit
    )


def _observation_matches(conn: Connection, tenant: str, vector: Any, pool: int = 50) -> list[str]:
    """Entity keys whose facts are nearest the query, nearest first (a bounded pool)."""
    rows = conn.execute(
        load_sql("graph/observation_matches.sql"),
        {"tenant": tenant, "vector": vector, "pool": pool},
    ).fetchall()
    return [row[0] for row in rows]


@dataclass(frozen=True, slots=True)
class EntityPage(GraphResult):
    """Entities in name order: summaries, or nodes when not summary. ``next_cursor``
    continues after the last one (None: the last page); ``next_offset`` says the same for
    offset paging (None when asked by cursor). ``entities`` repeats ``items`` (its name
    before paging; deprecated)."""

    items: list[EntitySummary | GraphNode]
    next_cursor: str | None
    total: int
    offset: int
    limit: int
    next_offset: int | None
    entities: list[EntitySummary | GraphNode]


LISTING = "graph_entities"


def read_graph(
    elephant: Elephant,
    tenant: str,
    *,
    offset: int = 0,
    limit: int = 50,
    summary: bool = True,
    cursor: str | None = None,
) -> EntityPage:
    """One page of entities in name order; summary drops observations and relation lists."""
    _bounded(offset, "offset", 0, MAX_OFFSET)
    _bounded(limit, "limit", 1, MAX_LIMIT)
    paging.exclusive(cursor, offset)
    after = paging.decode(LISTING, cursor, (str, int)) if cursor is not None else None
    store = graph_store(elephant)
    with elephant.db.reading(tenant) as conn:
        if not store.exists(conn, tenant):
            return EntityPage([], None, 0, offset, limit, None, [])
        if after is None:
            found, total = store.page(conn, tenant, offset, limit + 1)
            start = offset
        else:
            start, found, total = _after_key(store, conn, tenant, after[0], after[1], limit + 1)
        entities = found[:limit]
        if summary:
            counts = _observation_counts(conn, tenant, [e.key for e in entities])
            relations = store.relations(conn, tenant, [e.key for e in entities], active_only=True)
            items: list[EntitySummary | GraphNode] = [
                EntitySummary(
                    name=e.name,
                    entity_type=e.role,
                    domain=e.domain,
                    epistemic=e.epistemic,
                    observations=counts.get(e.key, 0),
                    relations=sum(e.key in (r.source, r.target) for r in relations),
                )
                for e in entities
            ]
        else:
            items = list(
                _nodes(store, conn, tenant, entities, max_relations=50, max_observations=50)
            )
    more = len(found) > limit
    end = start + len(entities)
    following = paging.encode(LISTING, (entities[-1].key, end)) if more else None
    next_offset = end if more and after is None else None
    return EntityPage(items, following, total, offset, limit, next_offset, items)


def _after_key(
    store: GraphStore, conn: Connection, tenant: str, last_key: str, hint: int, count: int
) -> tuple[int, list[Entity], int]:
    """(position, entities, total): up to ``count`` entities whose key follows ``last_key``.

    The store pages by offset, so the page is found by position: ``hint`` (where the
    previous page ended) is checked first, one query when nothing changed in between;
    otherwise the first key after ``last_key`` is searched for outward from the hint
    (a few one-row reads), so writes before the position move it, never the rows."""
    window, total = store.page(conn, tenant, max(hint - 1, 0), count + 1)
    if hint > 0 and window and window[0].key <= last_key:
        rest = window[1:]
        if not rest or rest[0].key > last_key:
            return hint, rest[:count], total
    hint = min(max(hint, 0), total)

    def follows(position: int) -> bool:
        """Whether the entity at ``position`` comes after last_key (true past the end)."""
        found, _ = store.page(conn, tenant, position, 1)
        return not found or found[0].key > last_key

    position = _first_true(follows, hint)
    page, total = store.page(conn, tenant, position, count)
    return position, page, total


def _first_true(predicate: Callable[[int], bool], hint: int) -> int:
    """The least position >= 0 where a monotone predicate (false..., true...) holds,
    galloping out from ``hint`` and then halving (O(log distance) probes)."""
    step = 1
    if predicate(hint):
        high = hint
        low = max(high - step, 0)
        while low > 0 and predicate(low):
            high, step = low, step * 2
            low = max(high - step, 0)
        if low == 0 and predicate(0):
            return 0
    else:
        low = hint
        high = low + step
        while not predicate(high):
            low, step = high, step * 2
            high = low + step
    while high - low > 1:
        middle = (low + high) // 2
        if predicate(middle):
            high = middle
        else:
            low = middle
    return high


def _observation_counts(conn: Connection, tenant: str, keys: Sequence[str]) -> dict[str, int]:
    rows = conn.execute(
        load_sql("graph/observation_counts.sql"),
        (tenant, list(keys)),
    ).fetchall()
    return {key: int(count) for key, count in rows}


def neighbourhood(
    elephant: Elephant, tenant: str, query: str | None, *, limit: int = 50, hops: int = 1
) -> Neighbourhood:
    """Nodes and edges around the entities a query names, breadth first up to `hops`
    (``GraphStore.walk``: a recursive CTE on the relational backend, a statement per hop
    on AGE)."""
    require_text("query", query)
    _bounded(hops, "hops", 1, MAX_HOPS)
    _bounded(limit, "limit", 1, MAX_LIMIT)
    store = graph_store(elephant)
    with elephant.db.reading(tenant) as conn:
        if not store.exists(conn, tenant):
            return Neighbourhood(nodes=[], edges=[], truncated=False)
        if query and entity_key(query):
            seeds = find(store, conn, tenant, [entity_key(query)], domain=None, role=None)
        else:
            seeds, _ = store.page(conn, tenant, 0, limit)
        walk = store.walk(conn, tenant, [e.key for e in seeds], hops, limit)
        nodes, edges = walk.entities, walk.relations
    names = {key: entity.name for key, entity in nodes.items()}
    return Neighbourhood(
        nodes=[GraphEntity.of(entity) for entity in nodes.values()],
        edges=[GraphRelation.of(relation, names) for relation in edges],
        truncated=walk.truncated,
    )
