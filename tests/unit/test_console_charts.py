"""The console's inline SVG charts (app/console/charts.py): well-formed XML, accessible,
labels escaped, and sane with no data, one point or very large values."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

import pytest
from markupsafe import Markup

from app.console.charts import (
    HEIGHT,
    LEFT,
    RIGHT,
    WIDTH,
    Series,
    bar_chart,
    compact,
    exact,
    line_chart,
    nice_ticks,
)

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = '<script>alert("x")</script> & </svg><img src=x onerror=alert(1)>'
DAYS = ["2026-11-28", "2026-11-29", "2026-11-30", "2026-12-01"]


def parse(chart: Markup) -> ET.Element:
    assert isinstance(chart, Markup)
    root = ET.fromstring(str(chart))  # noqa: S314 (our own markup, under test)
    assert root.tag == f"{SVG}svg"
    assert root.get("role") == "img"
    assert root.get("aria-label")
    title = root.find(f"{SVG}title")
    assert title is not None and title.text
    desc = root.find(f"{SVG}desc")
    assert desc is not None and root.get("aria-describedby") == desc.get("id")
    assert "style" not in str(chart)  # the CSP allows no inline style
    return root


def all_text(root: ET.Element) -> str:
    return " ".join(root.itertext())


def test_a_line_chart_draws_a_line_an_area_and_a_point_per_value() -> None:
    chart = line_chart(
        DAYS,
        [Series("memories", [1, 3, 3, 7]), Series("facts", [0, 2, 5, 9])],
        title="Stored",
        ident="stored",
    )
    root = parse(chart)
    assert root.get("id") == "stored"
    assert len(root.findall(f".//{SVG}path[@class='line series-0']")) == 1
    assert len(root.findall(f".//{SVG}path")) == 4  # a line and an area per series
    points = root.findall(f".//{SVG}circle")
    assert len(points) == 8
    assert points[3].find(f"{SVG}title").text == "2026-12-01 · memories: 7"  # type: ignore[union-attr]
    legend = [t.text for t in root.findall(f".//{SVG}g[@class='legend']//{SVG}text")]
    assert legend == ["memories", "facts"]
    label = root.get("aria-label") or ""
    assert "2026-11-28 to 2026-12-01" in label and "facts: total 16, highest 9" in label


def test_bars_stack_or_stand_side_by_side() -> None:
    series = [Series("extract_facts", [10, 0, 5, 1]), Series("reflect", [2, 4, 0, 1])]
    stacked = parse(bar_chart(DAYS, series, title="Tokens", ident="t"))
    bars = stacked.findall(f".//{SVG}rect[@class]")
    bars = [bar for bar in bars if "bar" in (bar.get("class") or "")]
    assert len(bars) == 6  # zero values draw nothing
    first_day = [bar for bar in bars if bar.find(f"{SVG}title").text.startswith(DAYS[0])]  # type: ignore[union-attr]
    assert len({bar.get("x") for bar in first_day}) == 1  # one column, stacked
    grouped = parse(bar_chart(DAYS, series, title="Tokens", ident="g", stacked=False))
    columns = [
        bar
        for bar in grouped.findall(f".//{SVG}rect")
        if "bar" in (bar.get("class") or "") and bar.find(f"{SVG}title").text.startswith(DAYS[0])  # type: ignore[union-attr]
    ]
    assert len({bar.get("x") for bar in columns}) == 2  # side by side


@pytest.mark.parametrize("kind", ["line", "bar"])
def test_every_label_is_escaped(kind: str) -> None:
    draw = line_chart if kind == "line" else bar_chart
    chart = draw([HOSTILE, "ok"], [Series(HOSTILE, [1, 2])], title=HOSTILE, ident=HOSTILE)
    root = parse(chart)  # still well-formed
    assert "<script" not in str(chart) and "<img" not in str(chart)
    assert root.find(f".//{SVG}script") is None and root.find(f".//{SVG}img") is None
    assert HOSTILE in all_text(root)  # shown as text, exactly
    assert HOSTILE in (root.get("aria-label") or "")
    assert (root.get("id") or "").replace("-", "").isalnum()


@pytest.mark.parametrize("kind", ["line", "bar"])
def test_no_data_draws_an_empty_frame_that_says_so(kind: str) -> None:
    draw = line_chart if kind == "line" else bar_chart
    for labels, series in (([], [Series("a", [])]), (DAYS, []), ([], [])):
        root = parse(draw(labels, series, title="Empty", ident="e", empty_message="Nothing yet"))
        assert "Nothing yet" in all_text(root)
        assert "Nothing yet" in (root.get("aria-label") or "")
        assert root.find(f".//{SVG}circle") is None
    all_zero = parse(draw(DAYS, [Series("a", [0, 0, 0, 0])], title="Zeros", ident="z"))
    assert [t.text for t in all_zero.findall(f".//{SVG}text[@class='tick']")][:2] == ["0", "1"]


def test_one_point_is_a_marker_in_the_middle() -> None:
    root = parse(line_chart(["2026-12-01"], [Series("memories", [5])], title="One", ident="one"))
    assert root.findall(f".//{SVG}path") == []  # no line through a single point
    (point,) = root.findall(f".//{SVG}circle")
    assert float(point.get("cx") or 0) == pytest.approx((LEFT + WIDTH - RIGHT) / 2)
    bar = parse(bar_chart(["2026-12-01"], [Series("calls", [5])], title="One", ident="b"))
    assert len([r for r in bar.findall(f".//{SVG}rect") if "bar" in (r.get("class") or "")]) == 1


def test_very_large_and_odd_values_stay_inside_the_frame() -> None:
    huge = [3.2e12, 7.5e14, 1e15, float("nan"), float("inf")]
    labels = [f"d{i}" for i in range(len(huge))]
    root = parse(bar_chart(labels, [Series("tokens", huge)], title="Huge", ident="h"))
    ticks = [t.text for t in root.findall(f".//{SVG}text[@class='tick']")]
    assert "1000T" in ticks and "0" in ticks
    for bar in root.findall(f".//{SVG}rect"):
        assert 0 <= float(bar.get("y") or 0) <= HEIGHT
        assert float(bar.get("height") or 0) <= HEIGHT
    assert "e+" not in str(bar_chart(labels, [Series("tokens", huge)], title="Huge", ident="h"))
    line = parse(line_chart(labels, [Series("tokens", huge)], title="Huge", ident="h"))
    for point in line.findall(f".//{SVG}circle"):
        assert 0 <= float(point.get("cy") or 0) <= HEIGHT


def test_many_days_get_a_few_x_labels_only() -> None:
    labels = [f"day-{i:02d}" for i in range(90)]
    root = parse(line_chart(labels, [Series("m", list(range(90)))], title="90", ident="n"))
    x_labels = [t.text for t in root.findall(f".//{SVG}text[@class='tick'][@text-anchor='middle']")]
    assert x_labels[-1] == "day-89"  # counted back from the latest
    assert 3 <= len(x_labels) <= 7
    positions = [int(label[4:]) for label in x_labels]
    assert len({b - a for a, b in itertools.pairwise(positions)}) == 1  # even
    xs = [float(t.get("x") or 0) for t in root.findall(f".//{SVG}text[@text-anchor='middle']")]
    assert min(b - a for a, b in itertools.pairwise(xs)) > 8 * 7  # no overlap


def test_ticks_and_number_formats() -> None:
    assert nice_ticks(0, 7) == [0, 2, 4, 6, 8]
    assert nice_ticks(0, 1) == [0, 1]
    assert nice_ticks(0, 0.3, integer=False)[-1] == pytest.approx(0.3)
    assert nice_ticks(-5, 5)[0] < 0
    assert [compact(v) for v in (0, 950, 1500, 12_000_000, 3.2e12, -2500)] == [
        "0",
        "950",
        "1.5k",
        "12M",
        "3.2T",
        "-2.5k",
    ]
    assert exact(1234567) == "1,234,567" and exact(0.02205) == "0.022"
