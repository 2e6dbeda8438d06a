"""The Graph page: an entity's neighbourhood (1-3 hops) as of an instant, drawn and tabled.

``entity`` names the centre (an unknown name shows the closest matches of the graph
search instead); ``hops`` 1-3; ``as_of`` an ISO instant (none: now) or ``at``, a stop
of the as-of slider (the moments at which a relation of the neighbourhood began,
ended or was recorded, and now); ``show`` valid (only what was true then) or all
(what was not is drawn greyed). The service (app/services/graph/neighbourhood.py)
hides which graph backend answers.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from urllib.parse import urlencode

from litestar.params import Parameter
from litestar.response import Template

from app.console.forms import moment as parse_moment
from app.console.graph_svg import STATUS_STYLE, draw
from app.console.pages.base import ConsolePages, ScreenDep, view
from app.errors import NotFound
from app.services.graph import reads
from app.services.graph.neighbourhood import (
    MAX_HOPS,
    EntityNeighbourhood,
    Node,
    entity_neighbourhood,
)

Show = Literal["valid", "all"]
SUGGESTIONS = 8
FIRST_ENTITIES = 40


def moment_label(value: datetime | None) -> str:
    """A slider stop as people read it (seconds matter: one call stamps several rows)."""
    return "now" if value is None else value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def stops(view: EntityNeighbourhood, now: datetime) -> list[datetime | None]:
    """The slider's positions: every moment of the neighbourhood, with now (None) in its
    place in time (a relation may begin in the future)."""
    before = [m for m in view.moments if m <= now]
    after = [m for m in view.moments if m > now]
    return [*before, None, *after]


def stop_of(positions: list[datetime | None], as_of: datetime | None, now: datetime) -> int:
    """The slider position showing ``as_of``: the last stop not after it (now: its own)."""
    if as_of is None:
        return positions.index(None)
    best = 0
    for index, moment in enumerate(positions):
        if (now if moment is None else moment) <= as_of:
            best = index
    return best


def graph_link(base: str, name: str, hops: int, show: str, as_of: datetime | None) -> str:
    """The page centred on ``name`` with the same hops, time and filter."""
    params: dict[str, Any] = {"entity": name, "hops": hops}
    if show != "valid":
        params["show"] = show
    if as_of is not None:
        params["as_of"] = as_of.isoformat()
    return f"{base}/graph?{urlencode(params)}"


class GraphPages(ConsolePages):
    path = "/t/{tenant_id:str}/graph"

    @view("/")
    def index(
        self,
        screen: ScreenDep,
        entity: Annotated[
            str | None, Parameter(max_length=200, description="The entity at the centre.")
        ] = None,
        hops: Annotated[
            int, Parameter(ge=1, le=MAX_HOPS, description="Hops from the centre, 1-3.")
        ] = 1,
        as_of: Annotated[
            str | None, Parameter(max_length=100, description="The graph as of (ISO; none: now).")
        ] = None,
        at: Annotated[
            int | None, Parameter(ge=0, le=100_000, description="A stop of the as-of slider.")
        ] = None,
        show: Annotated[
            Show, Parameter(description="valid: only what was true then; all: everything.")
        ] = "valid",
    ) -> Template:
        elephant, tenant = screen.elephant, screen.tenant
        name = (entity or "").strip()
        context: dict[str, Any] = {
            "entity": name,
            "hops": hops,
            "show": show,
            "max_hops": MAX_HOPS,
            "view": None,
            "suggestions": [],
            "missing": None,
            "first_entities": [],
            "status_names": list(STATUS_STYLE),
        }
        if not name:
            listing = reads.read_graph(elephant, tenant, limit=FIRST_ENTITIES)
            context["first_entities"] = [item.name for item in listing.items]
            context["entity_total"] = listing.total
            return screen.render("graph/index.html", title="Graph", active="graph", **context)
        every = show == "all"
        asked = parse_moment("as_of", as_of)
        try:
            view = entity_neighbourhood(elephant, tenant, name, hops=hops, as_of=asked, every=every)
        except NotFound as exc:
            found = reads.search_nodes(elephant, tenant, name, limit=SUGGESTIONS, max_relations=0)
            context["missing"] = exc.message
            context["suggestions"] = [node.name for node in found.entities]
            return screen.render(
                "graph/index.html", title="Graph", active="graph", status_code=404, **context
            )
        now = datetime.now(UTC)
        positions = stops(view, now)
        if at is not None:
            chosen = positions[min(at, len(positions) - 1)]
            if chosen != view.as_of:
                view = entity_neighbourhood(
                    elephant, tenant, name, hops=hops, as_of=chosen, every=every
                )
        position = stop_of(positions, view.as_of, now)

        def link_to(entity_name: str) -> str:
            return graph_link(screen.base, entity_name, hops, show, view.as_of)

        def link(node: Node) -> str:
            return link_to(node.name)

        context.update(
            view=view,
            svg=draw(view, link),
            link_to=link_to,
            positions=positions,
            position=position,
            position_label=moment_label(view.as_of) if view.as_of else "now",
            labels_json=json.dumps([moment_label(p) for p in positions]),
            as_of_value=view.as_of.isoformat() if view.as_of else "",
        )
        title = f"Graph · {view.centre.name}"
        return screen.render("graph/index.html", title=title, active="graph", **context)
