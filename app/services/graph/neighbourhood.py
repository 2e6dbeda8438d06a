"""One entity's neighbourhood through time: the console's graph page (and any other reader).

``reads.neighbourhood`` walks the *current* relations only. To show the graph "as of"
an instant, and the relations that ended or had not begun by then, this walk follows
every relation (current and closed) of the backend in use, up to ``hops`` steps and
``limit`` entities, and then judges each relation's validity at the instant. The
moments at which anything in the neighbourhood changed (each relation's valid_from,
valid_to and recorded_at) are returned too: they are the stops of an as-of slider.
Only ``GraphStore`` methods are used, so AGE and the relational tables answer alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from app.db.resources import load_sql
from app.db.runtime import Connection
from app.errors import InvalidInput, NotFound
from app.services.common.inputs import require_text
from app.services.graph.operations import graph_store
from app.services.graph.store import Entity, GraphStore, Relation, entity_key
from app.services.graph.walk import new_ends
from app.services.runtime import Elephant

MAX_HOPS = 3
MAX_NODES = 60
MAX_OBSERVATIONS = 200

State = Literal["valid", "ended", "pending"]
"""At the instant: true, no longer true (valid_to passed), or not yet true (valid_from ahead)."""


@dataclass(frozen=True, slots=True)
class Node:
    """An entity of the neighbourhood and its distance (hops) from the centre."""

    key: str
    name: str
    entity_type: str
    domain: str
    epistemic: str
    hops: int
    valid_from: datetime | None
    valid_to: datetime | None


@dataclass(frozen=True, slots=True)
class SourceFact:
    """The extracted fact an ingest relation came from (its subject and another entity)."""

    id: str
    text: str


@dataclass(frozen=True, slots=True)
class Edge:
    """A relation (by entity key and name), its status, validity and state at the instant."""

    source: str
    target: str
    source_name: str
    target_name: str
    relation_type: str
    epistemic: str
    valid_from: datetime | None
    valid_to: datetime | None
    recorded_at: datetime | None
    origin: str | None  # "record" (graph API), "ingest" (extracted facts), ...
    state: State
    fact: SourceFact | None


@dataclass(frozen=True, slots=True)
class Observation:
    """An observation (or extracted fact) about the centre, with its validity then."""

    id: str
    content: str
    kind: str
    source: str | None
    status: str
    valid_from: datetime | None
    valid_to: datetime | None
    recorded_at: datetime | None
    state: State


@dataclass(frozen=True, slots=True)
class EntityNeighbourhood:
    """The centre, the nodes and edges shown, the centre's observations, and the moments.

    ``as_of`` is the instant asked for (None: now); ``instant`` the one used. With
    ``every`` false only relations (and observations) valid at the instant are shown;
    with it true all are, each with its ``state``. ``truncated``: the node limit cut
    the walk."""

    centre: Node
    nodes: list[Node]
    edges: list[Edge]
    observations: list[Observation]
    observations_total: int
    as_of: datetime | None
    instant: datetime
    hops: int
    every: bool
    moments: list[datetime]
    truncated: bool
    backend: str


def _time(value: Any) -> datetime | None:
    if value is None:
        return None
    parsed = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def state_at(valid_from: datetime | None, valid_to: datetime | None, instant: datetime) -> State:
    """Valid on [valid_from, valid_to): at valid_to it has ended."""
    if valid_from is not None and valid_from > instant:
        return "pending"
    if valid_to is not None and valid_to <= instant:
        return "ended"
    return "valid"


def _relation_state(relation: Relation, instant: datetime) -> State:
    props = relation.properties
    return state_at(_time(props.get("valid_from")), _time(props.get("valid_to")), instant)


def _identity(relation: Relation) -> tuple[str, str, str, str | None]:
    """A triple may hold several times (closed, then recorded again): told apart by start."""
    return (*relation.triple, relation.properties.get("valid_from"))


def _walk(
    store: GraphStore, conn: Connection, tenant: str, centre: Entity, hops: int, limit: int
) -> tuple[dict[str, Entity], list[Relation], bool]:
    """Breadth first from the centre along every relation (current and closed)."""
    nodes = {centre.key: centre}
    edges: dict[tuple[str, str, str, str | None], Relation] = {}
    truncated = False
    frontier = [centre.key]
    for _ in range(hops):
        if not frontier:
            break
        found = store.relations(conn, tenant, frontier, active_only=False)
        new_keys = new_ends(found, nodes)
        new_keys.sort()  # stable whatever order the backend returned
        room = limit - len(nodes)
        truncated = truncated or len(new_keys) > room
        kept = new_keys[: max(room, 0)]
        nodes.update(store.entities(conn, tenant, kept))
        for relation in found:
            if relation.source in nodes and relation.target in nodes:
                edges.setdefault(_identity(relation), relation)
        frontier = [key for key in kept if key in nodes]
    return nodes, list(edges.values()), truncated


def _distances(centre: str, relations: Iterable[Relation], hops: int) -> dict[str, int]:
    """Hops from the centre over the given relations (either direction), at most ``hops``."""
    around: dict[str, set[str]] = {}
    for relation in relations:
        around.setdefault(relation.source, set()).add(relation.target)
        around.setdefault(relation.target, set()).add(relation.source)
    distance = {centre: 0}
    frontier = [centre]
    for step in range(1, hops + 1):
        following = []
        for key in frontier:
            for other in sorted(around.get(key, ())):
                if other not in distance:
                    distance[other] = step
                    following.append(other)
        frontier = following
    return distance


def _moments(relations: Sequence[Relation]) -> list[datetime]:
    found: set[datetime] = set()
    for relation in relations:
        for name in ("valid_from", "valid_to", "recorded_at"):
            moment = _time(relation.properties.get(name))
            if moment is not None:
                found.add(moment)
    return sorted(found)


def _source_facts(
    conn: Connection, tenant: str, pairs: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], SourceFact]:
    """For each (subject, other) pair, the earliest extracted fact about the subject that
    names the other: where ingest took its `mentions` edge from."""
    if not pairs:
        return {}
    rows = conn.execute(
        load_sql("graph/source_facts.sql"),
        {
            "tenant": tenant,
            "subjects": [p[0] for p in pairs],
            "others": [p[1] for p in pairs],
        },
    ).fetchall()
    return {(row[0], row[1]): SourceFact(id=str(row[2]), text=str(row[3])) for row in rows}


def _observations(
    conn: Connection, tenant: str, key: str, instant: datetime
) -> tuple[list[Observation], int]:
    """Every observation of the entity (any status), earliest validity first, bounded."""
    rows = conn.execute(
        load_sql("graph/entity_observations.sql"),
        (tenant, key, MAX_OBSERVATIONS),
    ).fetchall()
    total = int(rows[0][8]) if rows else 0
    found = [
        Observation(
            id=str(row[0]),
            content=str(row[1]),
            kind=str(row[2]),
            source=row[3],
            status=str(row[4]),
            valid_from=_time(row[5]),
            valid_to=_time(row[6]),
            recorded_at=_time(row[7]),
            state=state_at(_time(row[5]), _time(row[6]), instant),
        )
        for row in rows
    ]
    return found, total


def _node(entity: Entity, hops: int) -> Node:
    return Node(
        key=entity.key,
        name=entity.name,
        entity_type=entity.role,
        domain=entity.domain,
        epistemic=entity.epistemic,
        hops=hops,
        valid_from=_time(entity.valid_from),
        valid_to=_time(entity.valid_to),
    )


def entity_neighbourhood(
    elephant: Elephant,
    tenant: str,
    name: str,
    *,
    hops: int = 1,
    as_of: datetime | None = None,
    every: bool = False,
    limit: int = MAX_NODES,
) -> EntityNeighbourhood:
    """The entity named ``name`` and what surrounds it up to ``hops`` steps, as of ``as_of``
    (None: now). NotFound when the tenant's graph has no such entity."""
    require_text("entity", name)
    key = entity_key(name)
    if not key:
        raise InvalidInput("entity: give the name of an entity")
    if not 1 <= hops <= MAX_HOPS:
        raise InvalidInput(f"hops must be between 1 and {MAX_HOPS}, got {hops}")
    if not 1 <= limit <= 200:
        raise InvalidInput(f"limit must be between 1 and 200, got {limit}")
    store = graph_store(elephant)
    as_of = _time(as_of)
    instant = as_of if as_of is not None else datetime.now(UTC)
    with elephant.db.reading(tenant) as conn:
        found = store.entities(conn, tenant, [key]) if store.exists(conn, tenant) else {}
        centre = found.get(key)
        if centre is None:
            raise NotFound(f"no entity named {name!r} in the graph of this tenant")
        entities, relations, truncated = _walk(store, conn, tenant, centre, hops, limit)
        shown = [r for r in relations if every or _relation_state(r, instant) == "valid"]
        distance = _distances(key, shown, hops)
        shown = [r for r in shown if r.source in distance and r.target in distance]
        facts = _source_facts(
            conn,
            tenant,
            sorted({(r.source, r.target) for r in shown if r.properties.get("source") == "ingest"}),
        )
        observations, total = _observations(conn, tenant, key, instant)
    nodes = sorted(
        (_node(entities[k], d) for k, d in distance.items() if k in entities),
        key=lambda n: (n.hops, n.key),
    )
    names = {k: e.name for k, e in entities.items()}
    edges = [
        Edge(
            source=r.source,
            target=r.target,
            source_name=names[r.source],
            target_name=names[r.target],
            relation_type=r.relation_type,
            epistemic=str(r.properties.get("epistemic", "unknown")),
            valid_from=_time(r.properties.get("valid_from")),
            valid_to=_time(r.properties.get("valid_to")),
            recorded_at=_time(r.properties.get("recorded_at")),
            origin=r.properties.get("source"),
            state=_relation_state(r, instant),
            fact=facts.get((r.source, r.target)),
        )
        for r in sorted(
            shown, key=lambda r: (_identity(r)[:3], r.properties.get("valid_from") or "")
        )
    ]
    if not every:
        observations = [o for o in observations if o.state == "valid"]
    return EntityNeighbourhood(
        centre=_node(centre, 0),
        nodes=nodes,
        edges=edges,
        observations=observations,
        observations_total=total,
        as_of=as_of,
        instant=instant,
        hops=hops,
        every=every,
        moments=_moments(relations),
        truncated=truncated,
        backend=store.backend,
    )
