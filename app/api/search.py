"""Read-path endpoints: search (GET and POST), stats, proactive, reflect.

Every endpoint that takes a query calls it ``query``; ``q``, the old name of GET
/search's parameter and of /reflect's field, is still accepted (app.api.params).
"""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get, post
from litestar.params import JSONBody, Parameter
from pydantic import Field

from app.api.params import DeprecatedQ, QueryText, one_query
from app.api.routes import Runtime, Tenant, route
from app.db.replicas import Consistency
from app.services.common.inputs import NonBlank
from app.services.ops.stats import StatsReport, stats
from app.services.retrieval.proactive import ProactiveIn, Suggestions, proactive
from app.services.retrieval.reflect import ReflectIn, Reflection, reflect
from app.services.retrieval.schemas import SearchFilters, SearchRequest, SearchResponse
from app.services.retrieval.search import search
from app.web.route_access import READ


class ReflectBody(ReflectIn):
    """POST /reflect: ReflectIn, whose ``query`` may come as ``q`` (its old name)."""

    query: NonBlank | None = Field(  # type: ignore[assignment]
        None, max_length=4000, description="The question."
    )
    q: NonBlank | None = Field(
        None, max_length=4000, description="Deprecated: the old name of query."
    )

    def request(self) -> ReflectIn:
        question = one_query(self.query, self.q)
        return ReflectIn.model_validate(
            {**self.model_dump(exclude={"query", "q"}), "query": question}
        )


class SearchController(Controller):
    tags = ["search"]

    @route(get, "/search", READ, "Hybrid search (short queries; POST for long)")
    def search_get(
        self,
        tenant: Tenant,
        elephant: Runtime,
        query_text: QueryText = None,
        q: DeprecatedQ = None,
        limit: Annotated[int | None, Parameter(ge=1, le=200, description="1-200.")] = None,
        source: Annotated[str | None, Parameter(description="Only this source.")] = None,
        expand: Annotated[bool | None, Parameter(description="Add query variants.")] = None,
        explain: Annotated[bool, Parameter(description="Add timings and lane details.")] = False,
        consistency: Annotated[
            Consistency,
            Parameter(
                description="replica (default): a read replica may answer, possibly lagging; "
                "primary: see every committed write, e.g. your own just before."
            ),
        ] = "replica",
    ) -> SearchResponse:
        body = SearchRequest(
            query=one_query(query_text, q),
            limit=limit,
            expand=expand,
            explain=explain,
            filters=SearchFilters(source=source),
            consistency=consistency,
        )
        return search(elephant, tenant, body).response()

    @route(post, "/search", READ, "Hybrid search", status_code=200)
    def search_post(
        self, tenant: Tenant, elephant: Runtime, data: JSONBody[SearchRequest]
    ) -> SearchResponse:
        return search(elephant, tenant, data).response()

    @route(get, "/stats", READ, "Counts by kind and source, sizes, index state")
    def stats(self, tenant: Tenant, elephant: Runtime) -> StatsReport:
        return stats(elephant, tenant)

    @route(post, "/proactive", READ, "Memories worth raising now", status_code=200)
    def proactive(
        self, tenant: Tenant, elephant: Runtime, data: JSONBody[ProactiveIn]
    ) -> Suggestions:
        return proactive(elephant, tenant, data)

    @route(post, "/reflect", READ, "Answer from memory, cited", status_code=200)
    def reflect(self, tenant: Tenant, elephant: Runtime, data: JSONBody[ReflectBody]) -> Reflection:
        return reflect(elephant, tenant, data.request())
