"""Knowledge-graph endpoints: record, decisions, revise, invalidate, delete, bounded reads.

The reads take ``query`` (``q``, its old name, is still accepted) and read_graph
pages by ``cursor``."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get, post
from litestar.params import JSONBody, Parameter, QueryParameter

from app.api.params import Cursor, DeprecatedQ, QueryText, one_query
from app.api.routes import Runtime, Tenant, route
from app.services.graph import operations as ops
from app.services.graph import reads
from app.services.graph.models import (
    AddObservationsIn,
    DecisionIn,
    DecisionResult,
    EntitiesDeleted,
    EntitiesIn,
    InvalidateIn,
    NamesIn,
    Neighbourhood,
    NodeSearchResult,
    ObservationRefsIn,
    ObservationsDeleted,
    ObservationsInvalidated,
    OpenedNodes,
    OpenIn,
    RecordIn,
    RecordResult,
    RelationRefsIn,
    RelationsDeleted,
    RelationsIn,
    RelationsInvalidated,
    ReviseIn,
    RevisionResult,
)
from app.web.route_access import ADMIN, READ, WRITE

Limit = Annotated[int, Parameter(ge=1, le=reads.MAX_LIMIT, description="1-200.")]


class GraphController(Controller):
    path = "/graph"
    tags = ["graph"]

    # ------------------------------------------------------------ writes

    @route(post, "/record", WRITE, "Entities, relations, observations: all or none")
    def record(self, tenant: Tenant, elephant: Runtime, data: JSONBody[RecordIn]) -> RecordResult:
        return ops.record(elephant, tenant, data)

    @route(post, "/decisions", WRITE, "A decision with its reason and each rejected alternative")
    def record_decision(
        self, tenant: Tenant, elephant: Runtime, data: JSONBody[DecisionIn]
    ) -> DecisionResult:
        return ops.record_decision(elephant, tenant, data)

    @route(
        post,
        "/revise",
        WRITE,
        "Invalidate what is no longer true and link its replacement (supersedes)",
        status_code=200,
    )
    def revise(self, tenant: Tenant, elephant: Runtime, data: JSONBody[ReviseIn]) -> RevisionResult:
        return ops.revise(elephant, tenant, data)

    @route(post, "/entities", WRITE, "Create entities (existing ones are merged)")
    def create_entities(
        self, tenant: Tenant, elephant: Runtime, data: JSONBody[EntitiesIn]
    ) -> RecordResult:
        return ops.create_entities(elephant, tenant, data.entities)

    @route(post, "/relations", WRITE, "Relate existing entities")
    def create_relations(
        self, tenant: Tenant, elephant: Runtime, data: JSONBody[RelationsIn]
    ) -> RecordResult:
        return ops.create_relations(elephant, tenant, data.relations)

    @route(post, "/observations", WRITE, "Add observations to existing entities")
    def add_observations(
        self, tenant: Tenant, elephant: Runtime, data: JSONBody[AddObservationsIn]
    ) -> RecordResult:
        return ops.add_observations(elephant, tenant, data.observations)

    @route(
        post,
        "/observations/invalidate",
        WRITE,
        "Mark observations no longer true (kept, hidden from reads)",
        status_code=200,
    )
    def invalidate_observations(
        self, tenant: Tenant, elephant: Runtime, data: JSONBody[InvalidateIn]
    ) -> ObservationsInvalidated:
        return ops.invalidate_observations(elephant, tenant, data.observations, data.reason)

    # ------------------------------------------------------------ deletions

    @route(
        post,
        "/entities/delete",
        ADMIN,
        "Delete entities with their relations and observations",
        status_code=200,
    )
    def delete_entities(
        self, tenant: Tenant, elephant: Runtime, data: JSONBody[NamesIn]
    ) -> EntitiesDeleted:
        return ops.delete_entities(elephant, tenant, data.names)

    @route(
        post,
        "/relations/invalidate",
        WRITE,
        "Relations no longer true: valid_to set, edges kept",
        status_code=200,
    )
    def invalidate_relations(
        self, tenant: Tenant, elephant: Runtime, data: JSONBody[RelationRefsIn]
    ) -> RelationsInvalidated:
        return ops.invalidate_relations(elephant, tenant, data.relations)

    @route(
        post,
        "/observations/delete",
        ADMIN,
        "Delete observations (prefer invalidate)",
        status_code=200,
    )
    def delete_observations(
        self, tenant: Tenant, elephant: Runtime, data: JSONBody[ObservationRefsIn]
    ) -> ObservationsDeleted:
        return ops.delete_observations(elephant, tenant, data.observations)

    @route(post, "/relations/delete", ADMIN, "Delete relations", status_code=200)
    def delete_relations(
        self, tenant: Tenant, elephant: Runtime, data: JSONBody[RelationRefsIn]
    ) -> RelationsDeleted:
        return ops.delete_relations(elephant, tenant, data.relations)

    # ------------------------------------------------------------ reads

    @route(get, "/search", READ, "Entities matching a query, bounded")
    def search_nodes(
        self,
        tenant: Tenant,
        elephant: Runtime,
        query_text: QueryText = None,
        q: DeprecatedQ = None,
        domain: Annotated[str | None, Parameter(description="Only this domain.")] = None,
        entity_type: Annotated[str | None, Parameter(description="Only this role.")] = None,
        limit: Limit = 10,
        max_relations: Annotated[
            int, Parameter(ge=0, le=500, description="Relations listed per entity, 0-500.")
        ] = 10,
    ) -> NodeSearchResult:
        return reads.search_nodes(
            elephant,
            tenant,
            one_query(query_text, q) or "",
            domain=domain,
            entity_type=entity_type,
            limit=limit,
            max_relations=max_relations,
        )

    @route(
        post,
        "/open",
        READ,
        "Named entities with their relations and active observations",
        status_code=200,
    )
    def open_nodes(self, tenant: Tenant, elephant: Runtime, data: JSONBody[OpenIn]) -> OpenedNodes:
        return reads.open_nodes(elephant, tenant, data.names, as_of=data.as_of)

    @route(get, "/entities", READ, "One page of the graph, in name order")
    def read_graph(
        self,
        tenant: Tenant,
        elephant: Runtime,
        offset: Annotated[
            int,
            Parameter(ge=0, le=reads.MAX_OFFSET, description="Entities to skip (prefer cursor)."),
        ] = 0,
        limit: Limit = 50,
        summary: Annotated[
            bool, Parameter(description="Counts only (true) or observations and relations.")
        ] = True,
        cursor: Cursor = None,
    ) -> reads.EntityPage:
        return reads.read_graph(
            elephant, tenant, offset=offset, limit=limit, summary=summary, cursor=cursor
        )

    @route(get, "/", READ, "Nodes and edges around the entities a query names")
    def neighbourhood(
        self,
        tenant: Tenant,
        elephant: Runtime,
        query_text: Annotated[
            str | None,
            QueryParameter(
                name="query", max_length=2000, description="Entity name (none: first page)."
            ),
        ] = None,
        q: Annotated[
            str | None, Parameter(max_length=2000, description="Deprecated: the old name of query.")
        ] = None,
        limit: Limit = 50,
        hops: Annotated[
            int, Parameter(ge=1, le=reads.MAX_HOPS, description="Hops from the seeds, 1-3.")
        ] = 1,
    ) -> Neighbourhood:
        return reads.neighbourhood(
            elephant, tenant, one_query(query_text, q, required=False), limit=limit, hops=hops
        )
