"""Inline SVG charts for console pages: pure functions from numbers to markup.

Drawn on the server, so a page needs no script and fetches nothing (the CSP allows
neither). Every chart is an ``<svg role="img">`` with an ``aria-label``, a ``<title>``
and a ``<desc>`` that sum it up; each mark carries its exact value in a ``<title>``
(the browser's tooltip). Pages also show the same numbers as a table: the chart is
the picture, not the only copy. Colours are presentation attributes (``fill``,
``stroke``) plus a ``series-<n>`` class a stylesheet may override; no ``style``
attribute anywhere (the CSP forbids inline styles). Every label passes through
``markupsafe`` escaping: a label is data, never markup.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup

PALETTE = ("#2357c6", "#c2571a", "#1b7f4b", "#7a3fc0", "#b42318", "#9a6700", "#0f7c8c", "#5b6475")
WIDTH = 600  # viewBox units; pages scale the chart to their column
HEIGHT = 260
LEFT = 60  # room for the y tick labels
RIGHT = 36  # room for the last x label, centred under the last point
TOP = 12
BOTTOM = 44  # room for the x tick labels
LEGEND_ROW = 20
CHAR_W = 7.0  # rough width of a legend character at 12px, for laying the legend out
TICK_CHAR_W = 7.0  # the same for a 12px tick label
MAX_BAR = 48  # the widest bar: a few groups must not turn into slabs
MAX_X_TICKS = 7
Y_TICKS = 5
_IDENT = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True, slots=True)
class Series:
    """One named row of values, aligned with the chart's x labels."""

    name: str
    values: Sequence[float]


@dataclass(frozen=True, slots=True)
class _Frame:
    """Where the plot area lies, and how values map onto it."""

    left: float
    top: float
    width: float
    height: float
    low: float
    high: float

    def y(self, value: float) -> float:
        span = self.high - self.low
        return self.top + self.height - (value - self.low) / span * self.height

    @property
    def bottom(self) -> float:
        return self.top + self.height


# ---------------------------------------------------------------- numbers


def compact(value: float) -> str:
    """A tick label: ``950``, ``1.5k``, ``12M``, ``3.2T`` (exact values go in tooltips)."""
    if not math.isfinite(value):
        return "—"
    magnitude = abs(value)
    for threshold, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if magnitude >= threshold:
            return _trim(value / threshold) + suffix
    return _trim(value)


def exact(value: float) -> str:
    """A value as a tooltip shows it: thousands separated, at most three decimals."""
    if not math.isfinite(value):
        return "—"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.3f}".rstrip("0").rstrip(".")


def _trim(value: float) -> str:
    text = f"{value:.1f}" if abs(value) < 100 else f"{value:.0f}"
    return text[:-2] if text.endswith(".0") else text


def nice_ticks(
    low: float, high: float, count: int = Y_TICKS, *, integer: bool = True
) -> list[float]:
    """Round tick values (steps of 1, 2, 2.5 or 5 times a power of ten) covering
    ``low``..``high``; whole numbers only when ``integer`` (counts, tokens)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        low, high = 0.0, 1.0
    if high <= low:
        high = low + 1.0
    raw = (high - low) / max(count, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = 10 * power
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
        if (high - low) / (factor * power) <= count:
            step = factor * power
            break
    if integer:
        step = max(1.0, float(math.ceil(step)))
    start = math.floor(low / step) * step
    end = math.ceil(high / step) * step
    steps = max(1, round((end - start) / step))
    return [start + i * step for i in range(steps + 1)]


def _clean(values: Sequence[float], length: int) -> list[float]:
    """Exactly ``length`` finite values (missing or non-finite ones read as 0)."""
    cleaned = [float(v) if math.isfinite(float(v)) else 0.0 for v in list(values)[:length]]
    return cleaned + [0.0] * (length - len(cleaned))


def _x_ticks(labels: Sequence[str], width: float) -> list[int]:
    """Which x positions get a label: evenly spaced, as many as fit side by side in
    ``width``, counted back from the last (today, on a time axis)."""
    count = len(labels)
    widest = max(len(label) for label in labels) * TICK_CHAR_W + 14
    fit = max(1, min(MAX_X_TICKS, int(width // widest)))
    if count <= fit:
        return list(range(count))
    step = math.ceil(count / fit) if fit > 1 else count
    return sorted(range(count - 1, -1, -step))


def ident_of(text: str) -> str:
    """An id for the chart's title and description (letters, digits, - and _ only)."""
    return _IDENT.sub("-", text).strip("-") or "chart"


# ---------------------------------------------------------------- pieces


def _open(ident: str, title: str, summary: str, kind: str) -> Markup:
    label = f"{title}. {summary}" if summary else title
    return Markup(
        '<svg xmlns="http://www.w3.org/2000/svg" class="chart {kind}" viewBox="0 0 {w} {h}" '
        'width="{w}" height="{h}" role="img" aria-label="{label}" '
        'aria-describedby="{ident}-desc" id="{ident}">'
        '<title id="{ident}-title">{title}</title><desc id="{ident}-desc">{summary}</desc>'
    ).format(kind=kind, w=WIDTH, h=HEIGHT, label=label, ident=ident, title=title, summary=summary)


def _empty(ident: str, title: str, kind: str, message: str) -> Markup:
    return _open(ident, title, message, kind) + Markup(
        '<rect class="plot" x="{x}" y="{y}" width="{w}" height="{h}" fill="#f5f7fa" '
        'stroke="#d8dde6"/><text class="empty" x="{cx}" y="{cy}" text-anchor="middle" '
        'fill="#5b6475" font-size="14">{message}</text></svg>'
    ).format(
        x=LEFT,
        y=TOP,
        w=WIDTH - LEFT - RIGHT,
        h=HEIGHT - TOP - BOTTOM,
        cx=LEFT + (WIDTH - LEFT - RIGHT) / 2,
        cy=TOP + (HEIGHT - TOP - BOTTOM) / 2,
        message=message,
    )


def _legend(series: Sequence[Series]) -> tuple[Markup, float]:
    """The series' colour keys in rows across the top; returns them and their height."""
    if len(series) < 2:
        return Markup(""), 0.0
    parts: list[Markup] = []
    x, row = float(LEFT), 0
    for index, one in enumerate(series):
        width = 18 + CHAR_W * len(one.name) + 16
        if x + width > WIDTH - RIGHT and x > LEFT:
            x, row = float(LEFT), row + 1
        y = TOP + row * LEGEND_ROW
        parts.append(
            Markup(
                '<g class="legend-item"><rect class="series-{i}" x="{x}" y="{y}" width="12" '
                'height="12" fill="{colour}"/><text x="{tx}" y="{ty}" font-size="12" '
                'fill="#1d2330">{name}</text></g>'
            ).format(
                i=index % len(PALETTE),
                x=_n(x),
                y=_n(y),
                colour=PALETTE[index % len(PALETTE)],
                tx=_n(x + 16),
                ty=_n(y + 10),
                name=one.name,
            )
        )
        x += width
    return Markup('<g class="legend">') + Markup("").join(parts) + Markup("</g>"), (
        row + 1
    ) * LEGEND_ROW


def _axes(
    frame: _Frame, ticks: Sequence[float], labels: Sequence[str], xs: Sequence[float]
) -> Markup:
    """Horizontal grid lines with y labels, the baseline, and a few x labels."""
    parts: list[Markup] = []
    for tick in ticks:
        y = frame.y(tick)
        parts.append(
            Markup(
                '<line class="grid" x1="{x1}" y1="{y}" x2="{x2}" y2="{y}" stroke="#d8dde6"/>'
                '<text class="tick" x="{tx}" y="{ty}" text-anchor="end" font-size="12" '
                'fill="#5b6475">{label}</text>'
            ).format(
                x1=_n(frame.left),
                x2=_n(frame.left + frame.width),
                y=_n(y),
                tx=_n(frame.left - 6),
                ty=_n(y + 4),
                label=compact(tick),
            )
        )
    parts.append(
        Markup(
            '<line class="axis" x1="{x1}" y1="{y}" x2="{x2}" y2="{y}" stroke="#5b6475"/>'
        ).format(
            x1=_n(frame.left), x2=_n(frame.left + frame.width), y=_n(frame.y(max(frame.low, 0.0)))
        )
    )
    for index in _x_ticks(labels, frame.width):
        # centred under its point, but moved in so a long label is not cut at an edge
        half = len(labels[index]) * TICK_CHAR_W / 2
        x = min(max(xs[index], half + 2), WIDTH - half - 2)
        parts.append(
            Markup(
                '<text class="tick" x="{x}" y="{y}" text-anchor="middle" font-size="12" '
                'fill="#5b6475">{label}</text>'
            ).format(x=_n(x), y=_n(frame.bottom + 18), label=labels[index])
        )
    return Markup('<g class="axes">') + Markup("").join(parts) + Markup("</g>")


def _frame(legend_height: float, low: float, high: float) -> _Frame:
    top = TOP + legend_height + (6 if legend_height else 0)
    return _Frame(
        left=LEFT,
        top=top,
        width=WIDTH - LEFT - RIGHT,
        height=HEIGHT - top - BOTTOM,
        low=low,
        high=high,
    )


def _n(value: float) -> str:
    """A coordinate, rounded (short markup, no exponent)."""
    return f"{value:.1f}".removesuffix(".0")


def _summary(series: Sequence[Series], labels: Sequence[str], unit: str) -> str:
    first, last = labels[0], labels[-1]
    span = first if first == last else f"{first} to {last}"
    parts = []
    for one in series:
        values = _clean(one.values, len(labels))
        parts.append(f"{one.name}: total {exact(sum(values))}, highest {exact(max(values))}")
    suffix = f" ({unit})" if unit else ""
    return f"{span}{suffix}; " + "; ".join(parts)


# ---------------------------------------------------------------- charts


def _series_group(name: str, marks: Sequence[Markup]) -> Markup:
    return (
        Markup('<g class="series" data-series="{name}">').format(name=name)
        + Markup("").join(marks)
        + Markup("</g>")
    )


def _span(rows: Sequence[Sequence[float]]) -> tuple[float, float]:
    """The values an axis must reach: every value, and 0."""
    return min(0.0, *(min(row) for row in rows)), max(0.0, *(max(row) for row in rows))


def _paint(index: int) -> tuple[str, str]:
    """The ``index``-th series' colour and its class (``series-N``)."""
    return PALETTE[index % len(PALETTE)], f"series-{index % len(PALETTE)}"


def _tip(label: str, one: Series, value: float, unit: str) -> Markup:
    """A mark's tooltip: the label, the series and its value."""
    return Markup("<title>{label} · {name}: {value}{unit}</title>").format(
        label=label, name=one.name, value=exact(value), unit=f" {unit}" if unit else ""
    )


def line_chart(
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    title: str,
    ident: str,
    unit: str = "",
    area: bool = True,
    integer: bool = True,
    summary: str | None = None,
    empty_message: str = "No data for this period",
) -> Markup:
    """Lines (filled down to the axis when ``area``) over ``labels``, one per series.

    A single point is drawn as a marker in the middle; no labels or no series gives an
    empty frame that says so."""
    ident = ident_of(ident)
    if not labels or not series:
        return _empty(ident, title, "line-chart", empty_message)
    rows = [_clean(one.values, len(labels)) for one in series]
    legend, legend_height = _legend(series)
    low, high = _span(rows)
    ticks = nice_ticks(low, high, integer=integer)
    frame = _frame(legend_height, ticks[0], ticks[-1])
    count = len(labels)
    if count == 1:
        xs = [frame.left + frame.width / 2]
    else:
        xs = [frame.left + i * frame.width / (count - 1) for i in range(count)]
    text = summary if summary is not None else _summary(series, labels, unit)
    parts = [_open(ident, title, text, "line-chart"), legend, _axes(frame, ticks, labels, xs)]
    base = frame.y(max(frame.low, 0.0))
    for index, (one, row) in enumerate(zip(series, rows, strict=True)):
        colour, colour_class = _paint(index)
        points = [(xs[i], frame.y(value)) for i, value in enumerate(row)]
        line = " ".join(
            f"{'M' if i == 0 else 'L'}{_n(x)} {_n(y)}" for i, (x, y) in enumerate(points)
        )
        marks: list[Markup] = []
        if area and count > 1:
            outline = f"{line} L{_n(points[-1][0])} {_n(base)} L{_n(points[0][0])} {_n(base)} Z"
            marks.append(
                Markup(
                    '<path class="area {c}" d="{d}" fill="{colour}" fill-opacity="0.15" '
                    'stroke="none"/>'
                ).format(c=colour_class, d=outline, colour=colour)
            )
        if count > 1:
            marks.append(
                Markup(
                    '<path class="line {c}" d="{d}" fill="none" stroke="{colour}" '
                    'stroke-width="2"/>'
                ).format(c=colour_class, d=line, colour=colour)
            )
        radius = 4 if count <= 31 else 2.5
        for label, value, (x, y) in zip(labels, row, points, strict=True):
            marks.append(
                Markup(
                    '<circle class="point {c}" cx="{x}" cy="{y}" r="{r}" fill="{colour}">'
                    "{tip}</circle>"
                ).format(
                    c=colour_class,
                    x=_n(x),
                    y=_n(y),
                    r=radius,
                    colour=colour,
                    tip=_tip(label, one, value, unit),
                )
            )
        parts.append(_series_group(one.name, marks))
    parts.append(Markup("</svg>"))
    return Markup("").join(parts)


def bar_chart(
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    title: str,
    ident: str,
    unit: str = "",
    stacked: bool = True,
    integer: bool = True,
    summary: str | None = None,
    empty_message: str = "No data for this period",
) -> Markup:
    """Bars per label: the series stacked on each other, or side by side (``stacked=False``).

    Stacked bars are for parts of a whole (tokens by operation per day), so negative
    values count as 0 there; grouped bars may go below the axis."""
    ident = ident_of(ident)
    if not labels or not series:
        return _empty(ident, title, "bar-chart", empty_message)
    rows = [_clean(one.values, len(labels)) for one in series]
    if stacked:
        rows = [[max(value, 0.0) for value in row] for row in rows]
        low, high = 0.0, max(sum(column) for column in zip(*rows, strict=True))
    else:
        low, high = _span(rows)
    legend, legend_height = _legend(series)
    ticks = nice_ticks(low, high, integer=integer)
    frame = _frame(legend_height, ticks[0], ticks[-1])
    band = frame.width / len(labels)
    xs = [frame.left + (i + 0.5) * band for i in range(len(labels))]
    text = summary if summary is not None else _summary(series, labels, unit)
    parts = [_open(ident, title, text, "bar-chart" + (" stacked" if stacked else " grouped"))]
    parts += [legend, _axes(frame, ticks, labels, xs)]
    width = min(band * 0.8 / (1 if stacked else len(series)), MAX_BAR)
    inner = width * (1 if stacked else len(series))
    zero = frame.y(max(frame.low, 0.0))
    tops = [0.0] * len(labels)
    for index, (one, row) in enumerate(zip(series, rows, strict=True)):
        colour, colour_class = _paint(index)
        marks: list[Markup] = []
        for position, (label, value) in enumerate(zip(labels, row, strict=True)):
            if value == 0:
                continue
            if stacked:
                x = frame.left + position * band + (band - inner) / 2
                y_top = frame.y(tops[position] + value)
                y_bottom = frame.y(tops[position])
                tops[position] += value
            else:
                x = frame.left + position * band + (band - inner) / 2 + index * width
                y_top, y_bottom = sorted((frame.y(value), zero))
            marks.append(
                Markup(
                    '<rect class="bar {c}" x="{x}" y="{y}" width="{w}" height="{h}" '
                    'fill="{colour}">{tip}</rect>'
                ).format(
                    c=colour_class,
                    x=_n(x),
                    y=_n(y_top),
                    w=_n(max(width - 1, 1)),
                    h=_n(max(y_bottom - y_top, 0.5)),
                    colour=colour,
                    tip=_tip(label, one, value, unit),
                )
            )
        parts.append(_series_group(one.name, marks))
    parts.append(Markup("</svg>"))
    return Markup("").join(parts)


__all__ = ["Series", "bar_chart", "compact", "exact", "line_chart", "nice_ticks"]
