"""Read-path endpoints: search (GET and POST), stats, proactive, reflect.

Every endpoint that takes a query calls it ``query``; ``q``, the old name of GET
/search's parameter and of /reflect's field, is still accepted (app.api.params).
"""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import JSONBody, Parameter
from pydantic import Field

from app.api.params import DeprecatedQ, QueryText, one_query
from app.db.replicas import Consistency
from app.services.common.inputs import NonBlank
from app.services.ops.stats import StatsReport, stats
from app.services.retrieval.proactive import ProactiveIn, Suggestions, proactive
from app.services.retrieval.reflect import ReflectIn, Reflection, reflect
from app.services.retrieval.schemas import SearchFilters, SearchRequest, SearchResponse
from app.services.retrieval.search import search
from app.services.runtime import Elephant
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

    @get(
        "/search",
        sync_to_thread=True,
        opt=READ.opt,
        summary="Hybrid search (short queries; POST for long)",
    )
    def search_get(
        self,
        tenant: NamedDependency[str],
        elephant: NamedDependency[Elephant],
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

    @post("/search", sync_to_thread=True, opt=READ.opt, status_code=200, summary="Hybrid search")
    def search_post(
        self,
        tenant: NamedDependency[str],
        elephant: NamedDependency[Elephant],
        data: JSONBody[SearchRequest],
    ) -> SearchResponse:
        return search(elephant, tenant, data).response()

    @get(
        "/stats",
        sync_to_thread=True,
        opt=READ.opt,
        summary="Counts by kind and source, sizes, index state",
    )
    def stats(
        self, tenant: NamedDependency[str], elephant: NamedDependency[Elephant]
    ) -> StatsReport:
        return stats(elephant, tenant)

    @post(
        "/proactive",
        sync_to_thread=True,
        opt=READ.opt,
        status_code=200,
        summary="Memories worth raising now",
    )
    def proactive(
        self,
        tenant: NamedDependency[str],
        elephant: NamedDependency[Elephant],
        data: JSONBody[ProactiveIn],
    ) -> Suggestions:
        return proactive(elephant, tenant, data)

    @post(
        "/reflect",
        sync_to_thread=True,
        opt=READ.opt,
        status_code=200,
        summary="Answer from memory, cited",
    )
    def reflect(
        self,
        tenant: NamedDependency[str],
        elephant: NamedDependency[Elephant],
        data: JSONBody[ReflectBody],
    ) -> Reflection:
        return reflect(elephant, tenant, data.request())
