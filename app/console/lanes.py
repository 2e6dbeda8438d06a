"""Markup the search playground builds in Python: a hit's lane chart and its highlighted text.

Both return ``Markup`` whose every piece of stored or typed text went through
``escape``: templates autoescape, so markup has to be assembled here, and only here
is it known to be safe.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from app.services.retrieval.lanes import LANES as SEARCH_LANES

# The lanes of sql/retrieval/hybrid_search.sql (app/services/retrieval/lanes.py), in the
# order the chart draws them.
LANES: tuple[tuple[str, str], ...] = tuple((lane.name, lane.label) for lane in SEARCH_LANES)

# Words the keyword lane drops from a question (app.services.retrieval.expansion): marking them in
# every hit would point at matches no lane made.
_COMMON_WORDS = (
    "what when where who whom whose which why how did does are was were can could would "
    "should will has have had the and for you they she its this that these those with from "
    "not but about into"
)
_FUNCTION_WORDS = frozenset(_COMMON_WORDS.split())
_WORD = re.compile(r"\w+")

CHART_WIDTH = 236
ROW_HEIGHT = 17
LABEL_WIDTH = 78
TRACK_WIDTH = 112


@dataclass(frozen=True, slots=True)
class LaneMark:
    """A hit in one lane: its rank (1 = best; None: not found there) among the lane's
    ``pool`` candidates (0: the lane was off), and the RRF term that rank earned."""

    lane: str
    label: str
    rank: int | None
    pool: int
    score: float | None

    @property
    def state(self) -> str:
        if self.pool <= 0:
            return "off"
        return "absent" if self.rank is None else "ranked"

    def describe(self) -> str:
        if self.state == "off":
            return f"{self.label}: lane off"
        if self.rank is None:
            return f"{self.label}: not found"
        score = "" if self.score is None else f", RRF {self.score:.4f}"
        return f"{self.label}: rank {self.rank} of {self.pool}{score}"


def lane_marks(
    ranks: Mapping[str, int | None],
    pools: Mapping[str, int],
    weights: Mapping[str, float],
    rrf_k: int,
) -> list[LaneMark]:
    """One mark per lane named in ``ranks``, in registry order; the score is the lane's
    weight / (rrf_k + rank), the term that rank added to the fused score for the query as
    typed (variants add their own)."""
    marks = []
    for lane, label in LANES:
        if lane not in ranks:
            continue
        rank = ranks.get(lane)
        weight = weights.get(lane)
        score = None if rank is None or weight is None else weight / (rrf_k + rank)
        marks.append(LaneMark(lane, label, rank, int(pools.get(lane, 0)), score))
    return marks


def lane_chart(marks: Sequence[LaneMark], *, title: str) -> Markup:
    """A small horizontal bar per lane, longer for a better rank; a dashed empty track for
    a lane that did not find the hit, "off" for a lane that was switched off."""
    height = ROW_HEIGHT * len(marks) + 4
    summary = "; ".join(mark.describe() for mark in marks)
    parts = [
        Markup(
            '<svg class="lane-chart" role="img" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
            'aria-label="{label}" xmlns="http://www.w3.org/2000/svg"><title>{title}</title>'
        ).format(w=CHART_WIDTH, h=height, label=f"{title}: {summary}", title=f"{title}: {summary}")
    ]
    for row, mark in enumerate(marks):
        y = 2 + row * ROW_HEIGHT
        middle = y + ROW_HEIGHT / 2 + 4
        parts.append(
            Markup('<g class="lane lane-{lane} {state}" data-lane="{lane}">').format(
                lane=mark.lane, state=mark.state
            )
        )
        parts.append(
            Markup('<text x="0" y="{y:.1f}" class="lane-label">{label}</text>').format(
                y=middle, label=mark.label
            )
        )
        parts.append(
            Markup(
                '<rect class="lane-track" x="{x}" y="{y}" width="{w}" height="{h}" rx="2"/>'
            ).format(x=LABEL_WIDTH, y=y + 3, w=TRACK_WIDTH, h=ROW_HEIGHT - 6)
        )
        if mark.state == "ranked":
            assert mark.rank is not None
            share = max(0.04, (mark.pool - mark.rank + 1) / mark.pool) if mark.pool else 0.04
            parts.append(
                Markup(
                    '<rect class="lane-bar" x="{x}" y="{y}" width="{w:.1f}" height="{h}" rx="2"/>'
                ).format(x=LABEL_WIDTH, y=y + 3, w=TRACK_WIDTH * min(share, 1.0), h=ROW_HEIGHT - 6)
            )
            value = f"#{mark.rank}"
        else:
            value = "off" if mark.state == "off" else "—"
        parts.append(
            Markup('<text x="{x}" y="{y:.1f}" class="lane-rank">{value}</text>').format(
                x=LABEL_WIDTH + TRACK_WIDTH + 6, y=middle, value=value
            )
        )
        parts.append(Markup("</g>"))
    parts.append(Markup("</svg>"))
    return Markup("").join(parts)


def query_terms(query: str) -> list[str]:
    """The words of a query worth marking: lower-cased, at least three letters, no
    question or function words, each once, longest first (so a longer term wins)."""
    terms = {
        word.lower()
        for word in _WORD.findall(query)
        if len(word) > 2 and word.lower() not in _FUNCTION_WORDS
    }
    return sorted(terms, key=lambda term: (-len(term), term))


def highlight(text: str, query: str) -> Markup:
    """The text, escaped, with every whole-word, case-insensitive match of a query term
    wrapped in ``<mark>``."""
    terms = query_terms(query)
    if not terms:
        return escape(text)
    pattern = re.compile(
        r"(?<!\w)(?:" + "|".join(re.escape(term) for term in terms) + r")(?!\w)", re.IGNORECASE
    )
    parts: list[Markup] = []
    position = 0
    for match in pattern.finditer(text):
        parts.append(escape(text[position : match.start()]))
        parts.append(Markup("<mark>{}</mark>").format(match.group(0)))
        position = match.end()
    parts.append(escape(text[position:]))
    return Markup("").join(parts)
