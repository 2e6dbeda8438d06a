"""The search playground: run a search with its explain on and show why each hit ranked.

The form is a GET, so a search is a URL to share. Each hit shows its rank in every lane
as a small chart (app.console.lanes) with the same numbers as text, the query's words
marked in its text, and links to where it came from: a window's turns in its
conversation, a fact's page (and its cited turns), a note's memory page. The search
runs on the primary (a commit made just before is found) and is not recorded as a use
of its hits: looking at a ranking must not change the next one (activation prior).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import pydantic
from litestar.params import Parameter, QueryParameter
from litestar.response import Template
from markupsafe import Markup

from app.console.lanes import LANES, LaneMark, highlight, lane_chart, lane_marks
from app.console.pages.base import ConsolePages, ScreenDep, view
from app.errors import InvalidInput
from app.services.memory.transcripts import TurnLink, turn_links
from app.services.retrieval.lanes import LANE_NAMES, pools, rank_in
from app.services.retrieval.lanes import LANES as SEARCH_LANES
from app.services.retrieval.lanes import weights as lane_weights
from app.services.retrieval.schemas import SearchExplain, SearchHit, SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant

KINDS = ("window", "note", "fact")
Text = Annotated[str | None, Parameter(description="As typed in the form.")]


@dataclass(frozen=True)
class SearchForm:
    """The form as the page redraws it (the values typed, not the parsed ones)."""

    query: str
    limit: str
    source: str
    kind: str
    created_after: str
    created_before: str
    as_of: str
    asked_at: str
    include_expired: bool
    lanes: frozenset[str]
    expand: bool
    rerank: bool


@dataclass(frozen=True)
class HitView:
    hit: SearchHit
    rank: int
    text: Markup
    chart: Markup
    marks: list[LaneMark]
    turns: TurnLink | None


def _checked(given: bool, value: str | None, default: bool) -> bool:
    """A checkbox: its value once the form was sent (unchecked sends nothing), else default."""
    return value is not None if given else default


def _request(form: SearchForm) -> SearchRequest:
    """The search the form describes; a 422 saying what to fix when it describes none."""
    limit: int | None = None
    if form.limit:
        try:
            limit = int(form.limit)
        except ValueError:
            raise InvalidInput(f"limit: must be a whole number 1-200, got {form.limit!r}") from None
    if not form.lanes:
        raise InvalidInput("lanes: switch on at least one lane (windows, facts, keyword, ...)")
    if form.kind and form.kind not in KINDS:
        raise InvalidInput(f"kind: must be one of {', '.join(KINDS)}, got {form.kind!r}")
    body: dict[str, Any] = {
        "query": form.query,
        "limit": limit,
        "explain": True,
        "expand": form.expand,
        "rerank": form.rerank,
        "consistency": "primary",
        "asked_at": form.asked_at or None,
        "lanes": {lane: None if lane in form.lanes else 0 for lane in LANE_NAMES},
        "filters": {
            "source": form.source or None,
            "kind": form.kind or None,
            "created_after": form.created_after or None,
            "created_before": form.created_before or None,
            "as_of": form.as_of or None,
            "include_expired": form.include_expired,
        },
    }
    try:
        return SearchRequest.model_validate(body)
    except pydantic.ValidationError as exc:
        raise InvalidInput.from_validation(exc) from None


def _drawn(elephant: Elephant, sizes: dict[str, int]) -> list[str]:
    """The lanes a hit's chart draws: those that ran, and those on by default that this
    search switched off (drawn "off"); a lane off by default and here is left out."""
    settings = elephant.settings.search
    return [
        lane.name
        for lane in SEARCH_LANES
        if sizes.get(lane.name, 0) > 0 or lane.default_size(settings) > 0
    ]


def _hits(
    elephant: Elephant, tenant: str, query: str, hits: list[SearchHit], explain: SearchExplain
) -> list[HitView]:
    weights = lane_weights(elephant.settings.search)
    links = turn_links(elephant, tenant, [(hit.id, hit.kind) for hit in hits])
    views = []
    for rank, hit in enumerate(hits, start=1):
        sizes = pools(explain.lanes, hit.kind)
        ranks = {lane: rank_in(hit.ranks, lane) for lane in _drawn(elephant, sizes)}
        marks = lane_marks(ranks, sizes, weights, explain.rrf_k)
        views.append(
            HitView(
                hit=hit,
                rank=rank,
                text=highlight(hit.text, query),
                chart=lane_chart(marks, title=f"Lane ranks of result {rank}"),
                marks=marks,
                turns=links.get(hit.id),
            )
        )
    return views


class SearchPages(ConsolePages):
    path = "/t/{tenant_id:str}/search"

    @view("/")
    def index(
        self,
        screen: ScreenDep,
        query_text: Annotated[
            str | None, QueryParameter(name="query", description="What to find.")
        ] = None,
        limit: Text = None,
        source: Text = None,
        kind: Text = None,
        created_after: Text = None,
        created_before: Text = None,
        as_of: Text = None,
        asked_at: Text = None,
        include_expired: Text = None,
        lane: Annotated[list[str] | None, Parameter(description="Lanes switched on.")] = None,
        expand: Text = None,
        rerank: Text = None,
        form: Annotated[str | None, Parameter(description="1: the form was sent.")] = None,
    ) -> Template:
        elephant, tenant = screen.elephant, screen.tenant
        sent = form is not None
        reranker = elephant.reranker is not None
        shown = SearchForm(
            query=(query_text or "").strip(),
            limit=(limit or "").strip(),
            source=(source or "").strip(),
            kind=(kind or "").strip(),
            created_after=(created_after or "").strip(),
            created_before=(created_before or "").strip(),
            as_of=(as_of or "").strip(),
            asked_at=(asked_at or "").strip(),
            include_expired=include_expired is not None,
            lanes=frozenset(lane or ()) if sent else frozenset(LANE_NAMES),
            expand=_checked(sent, expand, elephant.settings.search.expand),
            rerank=reranker and _checked(sent, rerank, elephant.settings.reranker.enabled),
        )
        unknown = sorted(shown.lanes - set(LANE_NAMES))
        context: dict[str, Any] = {
            "form": shown,
            "lanes": LANES,
            "kinds": KINDS,
            "reranker": reranker,
            "result": None,
            "hits": [],
            "problem": None,
        }
        if not shown.query:
            return screen.render("search/index.html", title="Search", active="search", **context)
        try:
            if unknown:
                raise InvalidInput(
                    f"lane: unknown lane {unknown[0]!r}; the lanes are {', '.join(LANE_NAMES)}"
                )
            result = search(elephant, tenant, _request(shown), record_access=False)
        except InvalidInput as exc:
            context["problem"] = exc.message
            return screen.render(
                "search/index.html",
                title="Search",
                active="search",
                status_code=422,
                **context,
            )
        assert result.explain is not None  # asked for
        context["result"] = result
        context["hits"] = _hits(elephant, tenant, shown.query, result.hits, result.explain)
        return screen.render("search/index.html", title="Search", active="search", **context)
