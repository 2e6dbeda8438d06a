"""The knowledge-graph tools: thin adapters from MCP arguments to app.services.graph.

Reads are bounded and say what they left out (total_matched, truncated,
relations_total); writes are all-or-nothing; the delete tools exist only in the
full profile (kind "delete"), invalidation being the normal way to correct. Each
tool returns the service's typed result; ``answer`` turns it into the JSON the client
reads: the API's JSON, but a write's counts leave out their empty lists and a page of
the graph its deprecated copy of items.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from pydantic import Field

from app.mcp.context import current
from app.mcp.registry import ToolSet
from app.protocol import JSONObject
from app.services.graph import operations as ops
from app.services.graph import reads
from app.services.graph.models import (
    DecisionIn,
    DecisionResult,
    EntitiesDeleted,
    EntityIn,
    EntityName,
    NodeSearchResult,
    ObservationRefs,
    ObservationsDeleted,
    ObservationsIn,
    ObservationsInvalidated,
    OpenedNodes,
    OpenIn,
    Reason,
    RecordIn,
    RecordResult,
    RelationIn,
    RelationRef,
    RelationsDeleted,
    ReviseIn,
    RevisionResult,
)
from app.services.graph.reads import EntityPage


def answer(result: object) -> JSONObject:
    """The JSON a graph tool answers with: its result's JSON form (the API's), shortened
    where the API's is not worth an agent's tokens: a write's counts leave out their empty
    lists (and None), a page of the graph its deprecated copy of items (``entities``)."""
    body: JSONObject = msgspec.to_builtins(result)
    if isinstance(result, RecordResult):
        return {key: value for key, value in body.items() if value not in ([], None)}
    if isinstance(result, EntityPage):
        body.pop("entities")
    return body


GRAPH_TOOLS = ToolSet(answer=answer)

Names = Annotated[
    list[EntityName],
    Field(min_length=1, max_length=200, description="Entity names (case-insensitive)."),
]
Entities = Annotated[
    list[EntityIn],
    Field(description="{name, entity_type?, domain?, epistemic?, observations?[]} each."),
]
Relations = Annotated[
    list[RelationIn],
    Field(description="{source, relation_type, target, epistemic?, valid_from?} each."),
]
Observations = Annotated[
    list[ObservationsIn],
    Field(description="{entity, contents: [text or {content, kind}]} each."),
]
ObservationRefList = Annotated[
    list[ObservationRefs],
    Field(min_length=1, description="{entity, observations: [text or id]} each."),
]


# ------------------------------------------------------------------ read


@GRAPH_TOOLS.tool("read")
def search_nodes(
    query: Annotated[str, Field(min_length=1, max_length=500, description="Name or topic.")],
    domain: Annotated[str | None, Field(description="Only this subject domain.")] = None,
    entity_type: Annotated[str | None, Field(description="Only this entity type.")] = None,
    limit: Annotated[int, Field(ge=1, le=50, description="Entities, 1-50.")] = 10,
    max_relations: Annotated[int, Field(ge=0, le=100, description="Per entity.")] = 10,
) -> NodeSearchResult:
    """Find graph entities by name, then by what their observations say. Reports
    total_matched and truncated; each entity comes with up to max_relations relations."""
    runtime = current()
    return reads.search_nodes(
        runtime.elephant,
        runtime.tenant(),
        query,
        domain=domain,
        entity_type=entity_type,
        limit=limit,
        max_relations=max_relations,
    )


@GRAPH_TOOLS.tool("read")
def open_nodes(
    names: Names,
    as_of: Annotated[
        str | None,
        Field(description="ISO date: the entities as they were then (default: current)."),
    ] = None,
) -> OpenedNodes:
    """Entities by name with their active observations (id, kind, content) and current
    relations; names not in the graph are listed under missing."""
    runtime = current()
    when = OpenIn(names=names, as_of=as_of).as_of
    return reads.open_nodes(runtime.elephant, runtime.tenant(), names, as_of=when)


@GRAPH_TOOLS.tool("read")
def read_graph(
    cursor: Annotated[str | None, Field(description="next_cursor of the last page.")] = None,
    limit: Annotated[int, Field(ge=1, le=200, description="Entities per page.")] = 50,
    summary: Annotated[bool, Field(description="Counts only, no observation texts.")] = True,
    offset: Annotated[int, Field(ge=0, description="Entities to skip (or cursor).")] = 0,
) -> EntityPage:
    """One page of the graph in name order, with total and next_cursor for the next page."""
    runtime = current()
    return reads.read_graph(
        runtime.elephant,
        runtime.tenant(),
        offset=offset,
        limit=limit,
        summary=summary,
        cursor=cursor,
    )


# ------------------------------------------------------------------ write


@GRAPH_TOOLS.tool("write", idempotent=True)
def record(
    entities: Annotated[
        list[EntityIn] | None,
        Field(description="{name, entity_type?, domain?, epistemic?, observations?[]} each."),
    ] = None,
    relations: Annotated[
        list[RelationIn] | None,
        Field(description="{source, relation_type, target, epistemic?, valid_from?} each."),
    ] = None,
    observations: Annotated[
        list[ObservationsIn] | None,
        Field(description="{entity, contents: [text or {content, kind}]} each."),
    ] = None,
) -> RecordResult:
    """Write entities, relations and observations in one all-or-nothing call. Existing
    entities are merged, duplicate observations and relations skipped; a relation's ends
    must exist or be in the same call. Unknown types are rejected with the valid list."""
    runtime = current()
    request = RecordIn(
        entities=entities or [], relations=relations or [], observations=observations or []
    )
    return ops.record(runtime.elephant, runtime.tenant(), request)


@GRAPH_TOOLS.tool("write", idempotent=True)
def record_decision(
    name: Annotated[str, Field(min_length=1, max_length=200, description="Decision name.")],
    decided: Annotated[str, Field(min_length=1, description="What was decided.")],
    because: Annotated[str, Field(min_length=1, description="Why.")],
    rejected: Annotated[
        list[str] | None, Field(description="Alternatives considered and rejected.")
    ] = None,
    domain: Annotated[str | None, Field(description="Subject domain, e.g. software.")] = None,
    supersedes: Annotated[
        str | None, Field(description="An earlier decision this one replaces.")
    ] = None,
) -> DecisionResult:
    """Record a decision: what was decided, why, and each rejected alternative as
    separate observations; supersedes closes an earlier decision (kept as history)."""
    runtime = current()
    decision = DecisionIn(
        name=name,
        decided=decided,
        because=because,
        rejected=rejected or [],
        domain=domain,
        supersedes=supersedes,
    )
    return ops.record_decision(runtime.elephant, runtime.tenant(), decision)


@GRAPH_TOOLS.tool("write")
def revise(
    entity: Annotated[str, Field(min_length=1, max_length=200, description="What changed.")],
    superseded_by: Annotated[
        str, Field(min_length=1, max_length=200, description="The entity replacing it.")
    ],
    observations: Annotated[
        list[str] | None,
        Field(description="Its observations (text or id) no longer true; none: all of it."),
    ] = None,
    superseding_entity: Annotated[
        EntityIn | None, Field(description="Create the replacing entity in the same call.")
    ] = None,
    reason: Annotated[
        str | None, Field(max_length=2000, description="Why it is no longer true.")
    ] = None,
) -> RevisionResult:
    """Revise, never delete: invalidate what is no longer true and link the replacement
    with a supersedes relation, in one transaction."""
    runtime = current()
    request = ReviseIn(
        entity=entity,
        superseded_by=superseded_by,
        observations=observations or [],
        superseding_entity=superseding_entity,
        reason=reason,
    )
    return ops.revise(runtime.elephant, runtime.tenant(), request)


@GRAPH_TOOLS.tool("write", idempotent=True)
def create_entities(entities: Entities) -> RecordResult:
    """Create entities (existing ones are merged): name, entity_type, domain, epistemic."""
    runtime = current()
    return ops.create_entities(runtime.elephant, runtime.tenant(), entities)


@GRAPH_TOOLS.tool("write", idempotent=True)
def create_relations(relations: Relations) -> RecordResult:
    """Relate existing entities with a relation type from the vocabulary."""
    runtime = current()
    return ops.create_relations(runtime.elephant, runtime.tenant(), relations)


@GRAPH_TOOLS.tool("write", idempotent=True)
def add_observations(observations: Observations) -> RecordResult:
    """Add observations (note, decided, rejected, because, touches) to existing entities."""
    runtime = current()
    return ops.add_observations(runtime.elephant, runtime.tenant(), observations)


@GRAPH_TOOLS.tool("write")
def invalidate_observations(
    observations: ObservationRefList,
    reason: Annotated[Reason | None, Field(description="Why it is no longer true.")] = None,
) -> ObservationsInvalidated:
    """Mark observations no longer true: kept as history, hidden from current answers."""
    runtime = current()
    return ops.invalidate_observations(runtime.elephant, runtime.tenant(), observations, reason)


# ------------------------------------------------------------------ delete (profile full)


@GRAPH_TOOLS.tool("delete")
def delete_entities(names: Names) -> EntitiesDeleted:
    """Delete entities with their relations and observations. Prefer revise."""
    runtime = current()
    return ops.delete_entities(runtime.elephant, runtime.tenant(), names)


@GRAPH_TOOLS.tool("delete")
def delete_observations(observations: ObservationRefList) -> ObservationsDeleted:
    """Delete observations for good. Prefer invalidate_observations."""
    runtime = current()
    return ops.delete_observations(runtime.elephant, runtime.tenant(), observations)


@GRAPH_TOOLS.tool("delete")
def delete_relations(
    relations: Annotated[
        list[RelationRef], Field(min_length=1, description="{source, relation_type, target}.")
    ],
) -> RelationsDeleted:
    """Delete relations for good. Prefer revise, which keeps history."""
    runtime = current()
    return ops.delete_relations(runtime.elephant, runtime.tenant(), relations)
