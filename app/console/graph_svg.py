"""An entity's neighbourhood drawn as inline SVG: a deterministic layout, then markup.

Layout: concentric rings by hop distance around the centre. Ring 1 is ordered by
entity key; each further ring by the angle of its nearest parent on the ring inside,
then by key, so the same neighbourhood is always drawn the same way (no randomness,
no iteration) and children sit near their parents. A ring's radius grows with the
number of its nodes so labels do not collide. Parallel relations between two
entities are drawn as curves bowed apart.

Drawing: nodes are links (``<a href>``) that recentre the page on that entity (the
centre is highlighted and is not a link); edges carry their relation type as a
label and are styled by epistemic status, and by validity at the instant shown
(ended or not yet valid: grey and dashed, the label says which). Every piece of
text is escaped here (``markupsafe``); the page marks nothing else safe.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup

from app.services.graph.neighbourhood import Edge, EntityNeighbourhood, Node

RING_STEP = 170.0  # least distance between two rings
NODE_SPACING = 110.0  # least arc length between two nodes of a ring
NODE_RADIUS = 16.0
CENTRE_RADIUS = 24.0
MARGIN = 110.0  # room for labels outside the last ring
LABEL_CHARS = 24
BOW = 46.0  # how far apart parallel edges bow

# Epistemic status → (stroke colour, dash pattern or None). The legend and CSS use the same
# names; colours are presentation attributes here so the drawing needs no stylesheet.
STATUS_STYLE: dict[str, tuple[str, str | None]] = {
    "assertion": ("#1d2330", None),
    "hypothesis": ("#7a3fc0", "9 4"),
    "speculation": ("#c2571a", "2 4"),
    "unknown": ("#5b6475", None),
}
OFF_STYLE = ("#a3abb9", "6 5")  # ended or not yet valid at the instant shown
STATE_NOTE = {"valid": "", "ended": " (ended)", "pending": " (not yet)"}


@dataclass(frozen=True, slots=True)
class Point:
    x: float
    y: float


@dataclass(frozen=True, slots=True)
class Layout:
    positions: dict[str, Point]  # entity key → centre of its circle
    rings: list[float]  # radius of ring 1, 2, ...
    extent: float  # half the width (and height) of the drawing


def layout(nodes: Sequence[Node], edges: Sequence[Edge]) -> Layout:
    """Positions of the nodes: the centre (hops 0) at the origin, ring k at radius r_k."""
    neighbours: dict[str, set[str]] = {}
    for edge in edges:
        neighbours.setdefault(edge.source, set()).add(edge.target)
        neighbours.setdefault(edge.target, set()).add(edge.source)
    by_ring: dict[int, list[Node]] = {}
    for node in nodes:
        by_ring.setdefault(node.hops, []).append(node)
    positions: dict[str, Point] = {}
    angles: dict[str, float] = {}
    hops_of = {node.key: node.hops for node in nodes}
    for node in by_ring.get(0, []):
        positions[node.key] = Point(0.0, 0.0)
        angles[node.key] = -math.pi / 2
    rings: list[float] = []
    radius = 0.0
    for hop in sorted(k for k in by_ring if k > 0):
        ring = by_ring[hop]

        def parent_angle(node: Node, ring_inside: int = hop - 1) -> float:
            inside = [
                angles[other]
                for other in sorted(neighbours.get(node.key, ()))
                if other in angles and hops_of.get(other) == ring_inside
            ]
            return min(inside) if inside else 0.0

        ordered = sorted(ring, key=lambda n: (parent_angle(n), n.key))
        radius = max(hop * RING_STEP, radius + RING_STEP * 0.75,
                     len(ordered) * NODE_SPACING / (2 * math.pi))  # fmt: skip
        rings.append(radius)
        start = -math.pi / 2 if hop == 1 else _start(ordered, parent_angle)
        for index, node in enumerate(ordered):
            angle = start + 2 * math.pi * index / len(ordered)
            angles[node.key] = angle
            positions[node.key] = Point(radius * math.cos(angle), radius * math.sin(angle))
    extent = (rings[-1] if rings else 0.0) + MARGIN
    return Layout(positions=positions, rings=rings, extent=max(extent, 160.0))


def _start(ordered: Sequence[Node], parent_angle: Callable[[Node], float]) -> float:
    """Rotate an outer ring so its first node sits at its parent's angle."""
    return parent_angle(ordered[0]) if ordered else 0.0


def _short(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def _num(value: float) -> str:
    return f"{value:.1f}"


def _edge_path(a: Point, b: Point, bow: float, ra: float, rb: float) -> tuple[str, Point]:
    """A quadratic curve from circle a to circle b (ends on their rims) and its midpoint."""
    dx, dy = b.x - a.x, b.y - a.y
    length = math.hypot(dx, dy) or 1.0
    nx, ny = -dy / length, dx / length  # unit normal
    control = Point((a.x + b.x) / 2 + nx * bow, (a.y + b.y) / 2 + ny * bow)

    def rim(p: Point, toward: Point, r: float) -> Point:
        ux, uy = toward.x - p.x, toward.y - p.y
        d = math.hypot(ux, uy) or 1.0
        return Point(p.x + ux / d * r, p.y + uy / d * r)

    start, end = rim(a, control, ra), rim(b, control, rb + 3)
    middle = Point(
        0.25 * start.x + 0.5 * control.x + 0.25 * end.x,
        0.25 * start.y + 0.5 * control.y + 0.25 * end.y,
    )
    d = (
        f"M {_num(start.x)} {_num(start.y)} Q {_num(control.x)} {_num(control.y)} "
        f"{_num(end.x)} {_num(end.y)}"
    )
    return d, middle


def _markers() -> Markup:
    parts = []
    for name, (colour, _) in [*STATUS_STYLE.items(), ("off", OFF_STYLE)]:
        parts.append(
            Markup(
                '<marker id="arrow-{}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
                'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
                'fill="{}"/></marker>'
            ).format(name, colour)
        )
    return Markup("<defs>{}</defs>").format(Markup("").join(parts))


def _edge(edge: Edge, positions: dict[str, Point], bow: float, centre: str) -> Markup:
    a, b = positions[edge.source], positions[edge.target]
    radius = {
        key: CENTRE_RADIUS if key == centre else NODE_RADIUS for key in (edge.source, edge.target)
    }
    d, middle = _edge_path(a, b, bow, radius[edge.source], radius[edge.target])
    status = edge.epistemic if edge.epistemic in STATUS_STYLE else "unknown"
    valid = edge.state == "valid"
    colour, dash = STATUS_STYLE[status] if valid else OFF_STYLE
    marker = status if valid else "off"
    label = f"{edge.relation_type}{STATE_NOTE[edge.state]}"
    title = (
        f"{edge.source_name} {edge.relation_type} {edge.target_name} · {status}"
        f"{STATE_NOTE[edge.state]}"
    )
    return Markup(
        '<g class="edge {status} {state}" data-relation="{relation}" data-source="{source}" '
        'data-target="{target}" data-state="{state}"><title>{title}</title>'
        '<path d="{d}" fill="none" stroke="{colour}" stroke-width="{width}"{dash} '
        'marker-end="url(#arrow-{marker})"/>'
        '<text class="edge-label" x="{x}" y="{y}" text-anchor="middle">{label}</text></g>'
    ).format(
        status=status,
        state=edge.state,
        relation=edge.relation_type,
        source=edge.source_name,
        target=edge.target_name,
        title=title,
        d=d,
        colour=colour,
        width="2" if valid else "1.5",
        dash=Markup(' stroke-dasharray="{}"').format(dash) if dash else Markup(""),
        marker=marker,
        x=_num(middle.x),
        y=_num(middle.y - 4),
        label=label,
    )


def _node(node: Node, at: Point, link: Callable[[Node], str]) -> Markup:
    centre = node.hops == 0
    r = CENTRE_RADIUS if centre else NODE_RADIUS
    ended = " ended" if node.valid_to is not None else ""
    above = not centre and at.y < -1.0  # labels outward, away from the edges to the centre
    title = f"{node.name} ({node.entity_type}, {node.hops} hop{'s' if node.hops != 1 else ''})"
    body = Markup(
        '<title>{title}</title><circle cx="{x}" cy="{y}" r="{r}"/>'
        '<text class="node-name" x="{x}" y="{ny}" text-anchor="middle">{name}</text>'
        '<text class="node-type" x="{x}" y="{ty}" text-anchor="middle">{kind}</text>'
    ).format(
        title=title if not centre else f"{node.name} ({node.entity_type}): the centre",
        x=_num(at.x),
        y=_num(at.y),
        r=_num(r),
        ny=_num(at.y - r - 20 if above else at.y + r + 15),
        ty=_num(at.y - r - 6 if above else at.y + r + 29),
        name=_short(node.name),
        kind=node.entity_type,
    )
    if centre:
        return Markup('<g class="node centre{}" data-name="{}" aria-current="true">{}</g>').format(
            ended, node.name, body
        )
    return Markup('<a class="node hop-{}{}" href="{}" data-name="{}">{}</a>').format(
        node.hops, ended, link(node), node.name, body
    )


def draw(view: EntityNeighbourhood, link: Callable[[Node], str]) -> Markup:
    """The neighbourhood as one ``<svg>``; ``link(node)`` is where clicking a node goes."""
    placed = layout(view.nodes, view.edges)
    e = placed.extent
    groups: dict[tuple[str, str], list[Edge]] = {}
    for edge in view.edges:
        groups.setdefault(tuple(sorted((edge.source, edge.target))), []).append(edge)  # type: ignore[arg-type]
    edges = []
    for (low, _high), members in sorted(groups.items()):
        for index, edge in enumerate(members):
            bow = (index - (len(members) - 1) / 2) * BOW
            if edge.source != low:
                bow = -bow  # the normal flips with the direction: keep the bows apart
            edges.append(_edge(edge, placed.positions, bow, view.centre.key))
    rings = [
        Markup('<circle class="ring" cx="0" cy="0" r="{}" fill="none"/>').format(_num(r))
        for r in placed.rings
    ]
    nodes = [
        _node(n, placed.positions[n.key], link) for n in view.nodes if n.key in placed.positions
    ]
    # the centre last: drawn on top
    nodes.sort(key=lambda m: 'class="node centre' in m)
    size = _num(2 * e)
    summary = (
        f"Graph around {view.centre.name}: {len(view.nodes) - 1} neighbouring entities and "
        f"{len(view.edges)} relations within {view.hops} hop{'s' if view.hops != 1 else ''}"
    )
    return Markup(
        '<svg id="graph-svg" class="graph" role="group" aria-labelledby="graph-svg-title" '
        'xmlns="http://www.w3.org/2000/svg" viewBox="{v} {v} {s} {s}" width="{s}" height="{s}">'
        '<title id="graph-svg-title">{summary}</title>{defs}'
        '<g class="rings">{rings}</g><g class="edges">{edges}</g><g class="nodes">{nodes}</g>'
        "</svg>"
    ).format(
        v=_num(-e),
        s=size,
        summary=summary,
        defs=_markers(),
        rings=Markup("").join(rings),
        edges=Markup("").join(edges),
        nodes=Markup("").join(nodes),
    )
