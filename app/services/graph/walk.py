"""A bounded breadth-first walk from seed entities, one hop per statement.

The backend-neutral form of ``GraphStore.walk`` (AGE uses it; the relational
store answers the same question with one recursive CTE). Kept here, next to
nothing else, so both backends can be checked against the same definition.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence

from app.db.runtime import Connection
from app.services.graph.store import Entity, GraphStore, Relation, Triple, Walk


def walk_by_hops(
    store: GraphStore, conn: Connection, tenant: str, keys: Sequence[str], hops: int, limit: int
) -> Walk:
    """Seeds first, then each hop's new entities until ``limit``; ``truncated`` when the
    limit left a reachable entity out."""
    seeds = list(dict.fromkeys(keys))
    nodes = _in_order(store.entities(conn, tenant, seeds[:limit]), seeds[:limit])
    truncated = len(seeds) > limit
    edges: dict[Triple, Relation] = {}
    frontier = list(nodes)
    for _ in range(hops):
        if not frontier:
            break
        found = store.relations(conn, tenant, frontier, active_only=True)
        new_keys = new_ends(found, nodes)
        room = limit - len(nodes)
        truncated = truncated or len(new_keys) > room
        new_keys = new_keys[: max(room, 0)]
        nodes.update(_in_order(store.entities(conn, tenant, new_keys), new_keys))
        for relation in found:
            if relation.source in nodes and relation.target in nodes:
                edges[relation.triple] = relation
        frontier = new_keys
    return Walk(entities=nodes, relations=list(edges.values()), truncated=truncated)


def new_ends(relations: Iterable[Relation], known: Container[str]) -> list[str]:
    """The entity keys at either end of the relations that are not ``known`` yet, once
    each, in the order met."""
    found: dict[str, None] = {}
    for relation in relations:
        for key in (relation.source, relation.target):
            if key not in known:
                found.setdefault(key)
    return list(found)


def _in_order(found: dict[str, Entity], keys: Sequence[str]) -> dict[str, Entity]:
    return {key: found[key] for key in keys if key in found}
