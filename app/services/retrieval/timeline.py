"""Questions that ask how something went over time, and the structure lanes' parameters.

A question about an order of events ("in what order did she visit them?"), a change ("how
has his opinion changed?", "does she still ...?") or a period ("since March", "over the
years") needs one piece of evidence from each of several sessions; the text lanes rank
the sessions that sound most like it, often one. For such a question the timeline lane
(sql/retrieval/timeline_lane.sql) brings the named subject's facts, one per session, in
time order. Which questions: general English words of time order and change, not any
benchmark's phrasing; a bare "when" asks for one date, not a timeline. The neighbour lane
(sql/retrieval/neighbour_lane.sql) needs only how far a neighbour may lie.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from app.config import SearchSettings
from app.services.graph.linking import query_candidates

TIMELINE = "timeline"  # the lane (app/services/retrieval/lanes.py)
_TIMELINE = re.compile(
    r"\b("
    r"order|ordered|sequence|chronolog\w*|timeline|history|"
    r"since|anymore|still|so far|until now|to date|throughout|over (the|these|those) \w+|"
    r"over time|as time went on|in the (past|meantime)|"
    r"chang(e|ed|es|ing)|evolv(e|ed|es|ing)|develop(ed|s|ing)?|progress(ed|es|ing)?|"
    r"(grew|grow|grown|become|became) (more|less)|shift(ed|s)?|"
    r"first|last|latest|earliest|before|after|earlier|later|previous(ly)?|"
    r"how long|how many times|how often|every time"
    r")\b",
    re.IGNORECASE,
)


def asks_for_timeline(query: str) -> bool:
    """The question asks for an order of events, a change, or what happened over a span."""
    return _TIMELINE.search(query) is not None


def structure_lane_params(
    settings: SearchSettings, query: str, sizes: dict[str, int], asked: BaseModel
) -> dict[str, Any]:
    """The neighbour and timeline lanes' parameters. The timeline lane runs at its setting's
    size only for a question that asks for a timeline (``sizes`` gets 0 for it otherwise);
    a size the request names (``asked``, its LaneSizes) runs whatever the question."""
    if getattr(asked, TIMELINE) is None and not asks_for_timeline(query):
        sizes[TIMELINE] = 0
    return {
        "neighbour_turns": settings.neighbour_turns,
        "timeline_subjects": query_candidates(query) if sizes[TIMELINE] else [],
    }
