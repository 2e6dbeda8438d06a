"""The Memories and Facts pages: paged lists with filters, one memory, one fact's timeline.

Thin adapters over app/services/memory/records.py (lists, one record),
app/services/gate/decisions.py (the decisions that stored a memory) and
app/services/facts/history.py (a fact's chain and contradictions); the only thing
made here is the timeline chart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, cast, get_args

from litestar.params import Parameter, PathParameter
from litestar.response import Template
from markupsafe import Markup

from app.console.forms import blank, choice, moment, optional_uuid, required_uuid
from app.console.pages.base import ConsolePages, Screen, ScreenDep, view
from app.console.render import when
from app.errors import InvalidInput
from app.services.facts import history as fact_history
from app.services.facts.history import ChainLink
from app.services.gate import decisions as gate_log
from app.services.memory import records

PAGE_SIZE = 25
KINDS: tuple[str, ...] = get_args(records.MemoryKind)
STATUSES: tuple[str, ...] = get_args(records.FactStatus)
FACT_TYPES: tuple[str, ...] = get_args(records.FactType)

Text = Annotated[str | None, Parameter(description="Filter; empty: any.")]
Cursor = Annotated[str | None, Parameter(description="next page's cursor (none: the first).")]
Limit = Annotated[int, Parameter(description=f"Rows a page, 1-{records.MAX_LIMIT}.")]
MemoryId = Annotated[str, PathParameter(description="The memory's id.")]
FactId = Annotated[str, PathParameter(description="The fact's id.")]


def page_size(limit: int) -> int:
    """Rows a page: the console's 25 unless the link asks for another size."""
    if not 1 <= limit <= records.MAX_LIMIT:
        raise InvalidInput(f"limit: rows a page must be 1-{records.MAX_LIMIT}, got {limit}")
    return limit


def _list_page(
    screen: Screen,
    name: str,
    title: str,
    found: object,
    filters: dict[str, str | None],
    limit: int,
    cursor: str | None,
    **more: Any,
) -> Template:
    """A page of the Memories or Facts list: ``found`` with the ``filters`` in force; a
    paging link carries the filters over, and the page size when not the usual."""
    return screen.render(
        f"records/{name}.html",
        title=title,
        active=name,
        found=found,
        filters=filters,
        keep={**filters, "limit": None if limit == PAGE_SIZE else limit},
        paged=blank(cursor) is not None,
        **more,
    )


def step_label(step: int) -> str:
    if step == 0:
        return "this fact"
    if step < 0:
        return "replaced" if step == -1 else f"replaced ({-step} back)"
    return "replaced it" if step == 1 else f"later ({step} on)"


class RecordPages(ConsolePages):
    path = "/t/{tenant_id:str}"

    @view("/memories")
    def memories(
        self,
        screen: ScreenDep,
        kind: Annotated[str | None, Parameter(description="note or window.")] = None,
        source: Text = None,
        conversation: Text = None,
        cursor: Cursor = None,
        limit: Limit = PAGE_SIZE,
    ) -> Template:
        filters = {
            "kind": choice("kind", kind, KINDS),
            "source": blank(source),
            "conversation": blank(conversation),
        }
        found = records.list_memories(
            screen.elephant,
            screen.tenant,
            kind=cast("records.MemoryKind | None", filters["kind"]),
            source=filters["source"],
            conversation=filters["conversation"],
            limit=page_size(limit),
            cursor=blank(cursor),
        )
        return _list_page(
            screen, "memories", "Memories", found, filters, limit, cursor, kinds=KINDS
        )

    @view("/memories/{memory_id:str}")
    def memory(self, screen: ScreenDep, memory_id: MemoryId) -> Template:
        elephant, tenant = screen.elephant, screen.tenant
        ident = required_uuid("memory", memory_id)
        memory = records.get_memory(elephant, tenant, ident, record_access=False)
        facts = records.list_facts(elephant, tenant, memory_id=ident, limit=records.MAX_LIMIT)
        return screen.render(
            "records/memory.html",
            title=f"Memory {memory.id[:8]}",
            active="memories",
            memory=memory,
            facts=facts,
            decisions=gate_log.decisions_for_memory(elephant, tenant, memory.id),
            metadata_json=json.dumps(memory.metadata, indent=2, ensure_ascii=False, default=str),
        )

    @view("/facts")
    def facts(
        self,
        screen: ScreenDep,
        status: Annotated[
            str | None, Parameter(description="active (current), superseded or retracted.")
        ] = None,
        source: Text = None,
        memory: Text = None,
        subject: Text = None,
        type: Annotated[
            str | None, Parameter(description="world, experience or inference.")
        ] = None,
        as_of: Annotated[str | None, Parameter(description="Facts true at this time.")] = None,
        cursor: Cursor = None,
        limit: Limit = PAGE_SIZE,
    ) -> Template:
        chosen = choice("status", status, STATUSES)
        fact_type = choice("type", type, FACT_TYPES)
        memory_id = optional_uuid("memory", memory)
        found = records.list_facts(
            screen.elephant,
            screen.tenant,
            status=cast("records.FactStatus | None", chosen),
            source=blank(source),
            memory_id=memory_id,
            subject=blank(subject),
            fact_type=cast("records.FactType | None", fact_type),
            as_of=moment("as_of", as_of),
            limit=page_size(limit),
            cursor=blank(cursor),
        )
        filters = {
            "status": chosen,
            "source": blank(source),
            "memory": blank(memory),
            "subject": blank(subject),
            "type": fact_type,
            "as_of": blank(as_of),
        }
        more = {"statuses": STATUSES, "fact_types": FACT_TYPES}
        return _list_page(screen, "facts", "Facts", found, filters, limit, cursor, **more)

    @view("/facts/{fact_id:str}")
    def fact(self, screen: ScreenDep, fact_id: FactId) -> Template:
        ident = required_uuid("fact", fact_id)
        found = fact_history.history(screen.elephant, screen.tenant, ident)
        # the judgement behind each step of the chain, by (older, newer)
        links = {(c.older_id, c.newer_id): c for c in found.contradictions}
        return screen.render(
            "records/fact.html",
            title=f"Fact {found.fact.id[:8]}",
            active="facts",
            history=found,
            fact=found.fact,
            chart=timeline_chart(found.chain, datetime.now(UTC)),
            link_reasons=links,
            step_label=step_label,
        )


# ------------------------------------------------------------------ the timeline chart


@dataclass(frozen=True)
class _Axis:
    start: datetime
    end: datetime
    left: float
    width: float

    def x(self, moment: datetime) -> float:
        span = (self.end - self.start).total_seconds()
        return round(self.left + self.width * (moment - self.start).total_seconds() / span, 1)


LABEL_WIDTH = 150.0
CHART_WIDTH = 560.0
BAR = 12
GROUP = 2 * BAR + 16


def _axis(chain: list[ChainLink], now: datetime) -> _Axis:
    moments = [now] + [
        moment
        for link in chain
        for moment in (link.valid_from, link.valid_to, link.recorded_at, link.expired_at)
        if moment is not None
    ]
    start, end = min(moments), max(moments)
    pad = max((end - start) * 0.04, timedelta(hours=1))
    return _Axis(start - pad, end + pad, LABEL_WIDTH, CHART_WIDTH)


def _bar(
    axis: _Axis, y: float, begin: datetime | None, finish: datetime | None, kind: str, what: str
) -> Markup:
    """One range as a bar; an unknown start or an open end reaches the chart's edge, drawn
    lighter, so "since unknown" and "still true" are visible."""
    x0 = axis.left if begin is None else axis.x(begin)
    x1 = axis.left + axis.width if finish is None else axis.x(finish)
    classes = [f"tl-{kind}"]
    if begin is None:
        classes.append("tl-open-start")
    if finish is None:
        classes.append("tl-open-end")
    since = when(begin) if begin else "unknown start"
    title = f"{what}: {since} → {when(finish) if finish else 'open'}"
    return Markup(
        '<rect class="{}" x="{}" y="{}" width="{}" height="{}" rx="2"><title>{}</title></rect>'
    ).format(" ".join(classes), x0, y, max(x1 - x0, 2.0), BAR, title)


def _ticks(axis: _Axis, bottom: int) -> list[Markup]:
    """Five dated ticks with faint grid lines (dates only, unless the span is short)."""
    span = axis.end - axis.start
    shape = "%Y-%m-%d" if span > timedelta(days=3) else "%m-%d %H:%M"
    marks = []
    for index in range(5):
        moment = axis.start + span * (index / 4)
        x = axis.x(moment)
        anchor = "start" if index == 0 else "end" if index == 4 else "middle"
        marks.append(
            Markup(
                '<line class="tl-grid" x1="{x}" x2="{x}" y1="18" y2="{b}"/>'
                '<text class="tl-axis" x="{x}" y="14" text-anchor="{a}">{t}</text>'
            ).format(x=x, b=bottom, a=anchor, t=moment.strftime(shape))
        )
    return marks


def timeline_chart(chain: list[ChainLink], now: datetime) -> Markup:
    """An SVG of each fact's two ranges: valid (when it was true) and known (when this
    memory held it), on one time axis, the chain oldest first. The page lists the same
    dates as a table."""
    axis = _axis(chain, now)
    top = 26
    bottom = top + GROUP * len(chain)
    height = bottom + 18
    total = LABEL_WIDTH + CHART_WIDTH + 30
    parts = [
        Markup(
            '<svg class="timeline-chart" role="img" aria-labelledby="tl-title tl-desc" '
            'viewBox="0 0 {} {}" width="{}" height="{}" xmlns="http://www.w3.org/2000/svg">'
            '<title id="tl-title">Timeline of this fact and its chain</title>'
            '<desc id="tl-desc">For each fact, the upper bar is when it was true (valid from '
            "to valid to) and the lower bar when it was known (recorded to expired); a lighter "
            "bar has an unknown start or is still open. The table below lists the dates.</desc>"
        ).format(total, height, total, height),
        *_ticks(axis, bottom),
        Markup(
            '<line class="tl-now" x1="{x}" x2="{x}" y1="18" y2="{b}"/>'
            '<text class="tl-axis tl-now-label" x="{x}" y="{t}" text-anchor="middle">now</text>'
        ).format(x=axis.x(now), b=bottom, t=bottom + 12),
    ]
    for index, link in enumerate(chain):
        y = top + GROUP * index
        current = " tl-current" if link.step == 0 else ""
        parts.append(
            Markup('<g class="tl-fact{}"><text class="tl-label" x="4" y="{}">{}</text>').format(
                current, y + BAR, step_label(link.step)
            )
        )
        parts.append(
            Markup('<text class="tl-sub" x="4" y="{}">{}</text>').format(
                y + 2 * BAR + 2, link.text[:24] + ("…" if len(link.text) > 24 else "")
            )
        )
        parts.append(_bar(axis, y, link.valid_from, link.valid_to, "valid", "true"))
        parts.append(_bar(axis, y + BAR + 2, link.recorded_at, link.expired_at, "known", "known"))
        parts.append(Markup("</g>"))
    parts.append(Markup("</svg>"))
    return Markup("").join(parts)
