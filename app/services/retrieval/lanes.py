"""The lanes of the search statement, declared once.

sql/retrieval/hybrid_search.sql fuses its lanes by RRF. Each lane has a size (how many
candidates per query variant; the request may override the ``search.<name>`` setting),
an RRF weight (the ``search.<name>_weight`` setting), the kinds of result it can find (a
lane that finds none of the kinds asked for is off), the statement parameters its size
sets (the keyword lane runs once over memories and once over facts), and a label on the
console. The statement takes the lanes' names and weights as two arrays in this order
and returns each hit's ranks as one array in this order. The request model
(``LaneSizes``), a hit's ranks (``LaneRanks``), the statement parameters, the explain
block and the console's lane chart are all derived from ``LANES``: a new lane is one
entry here, one CTE in the statement and one line of its union (CONTRIBUTING.md,
"Where things go"), and its two settings; tests/unit/test_lane_registry.py checks that
the statement's lanes are these.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
from pydantic import BaseModel, ConfigDict, Field, create_model

from app.config import SearchSettings

MEMORY_KINDS = frozenset({"window", "note"})
FACT_KINDS = frozenset({"fact"})


@dataclass(frozen=True, slots=True)
class Lane:
    """One lane. ``sizes``: each statement parameter the lane's size sets, with the kinds
    that parameter's part of the lane searches; ``max_size``: the most a request may ask
    for. Its settings are named after it: ``search.<name>`` (size) and
    ``search.<name>_weight``."""

    name: str
    label: str
    sizes: tuple[tuple[str, frozenset[str]], ...]
    max_size: int = 1000

    def default_size(self, settings: SearchSettings) -> int:
        return int(getattr(settings, self.name))

    def rrf_weight(self, settings: SearchSettings) -> float:
        return float(getattr(settings, f"{self.name}_weight"))

    def parameters(self, size: int, kinds: frozenset[str]) -> dict[str, int]:
        """The statement parameters of this lane: its size where the kinds asked for meet
        what that part searches, else 0 (off)."""
        return {param: size if kinds & serves else 0 for param, serves in self.sizes}


# In the order of the statement's rank columns and of the console's chart.
LANES: tuple[Lane, ...] = (
    Lane("windows", "Windows", (("windows", MEMORY_KINDS),)),
    Lane("facts", "Facts", (("facts", FACT_KINDS),)),
    Lane("keyword", "Keyword", (("keyword_memories", MEMORY_KINDS), ("keyword_facts", FACT_KINDS))),
    Lane("graph", "Graph", (("graph", FACT_KINDS),)),
    Lane("preferences", "Preferences", (("preferences", FACT_KINDS),), max_size=100),
    Lane(
        "entity_expansion",
        "Entity expansion",
        (("entity_expansion_memories", MEMORY_KINDS), ("entity_expansion_facts", FACT_KINDS)),
    ),
    Lane(
        "entity_match",
        "Entity match",
        (("entity_match_memories", MEMORY_KINDS), ("entity_match_facts", FACT_KINDS)),
    ),
    Lane("neighbours", "Neighbours", (("neighbours", MEMORY_KINDS),)),
    Lane("timeline", "Timeline", (("timeline", FACT_KINDS),)),
)
LANE_NAMES: tuple[str, ...] = tuple(lane.name for lane in LANES)
# Every size parameter of the statement, as explain reports them.
STATEMENT_SIZES: tuple[str, ...] = tuple(param for lane in LANES for param, _ in lane.sizes)


class _Sizes(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


_LaneSizes: type[BaseModel] = create_model(  # type: ignore[call-overload]
    "LaneSizes",
    __base__=_Sizes,
    **{lane.name: (int | None, Field(None, ge=0, le=lane.max_size)) for lane in LANES},
)
_LaneRanks: type[msgspec.Struct] = msgspec.defstruct(
    "LaneRanks",
    [(lane.name, int | None) for lane in LANES],
    frozen=True,
    kw_only=True,
    module=__name__,
)
_LaneRanks.__doc__ = (
    "A hit's rank (1 = best) in each lane of the fused statement; None: not found there."
)

if TYPE_CHECKING:  # the static view: attribute access is by lane name (lane_size, ranks)
    LaneSizes = _Sizes
    LaneRanks = msgspec.Struct
else:
    LaneSizes = _LaneSizes
    LaneRanks = _LaneRanks


def requested_sizes(settings: SearchSettings, asked: BaseModel, kinds: set[str]) -> dict[str, int]:
    """Every size parameter of the statement: the request's size of each lane, else the
    setting; a lane part that searches none of ``kinds`` is 0."""
    wanted = frozenset(kinds)
    sizes: dict[str, int] = {}
    for lane in LANES:
        size = getattr(asked, lane.name)
        sizes |= lane.parameters(lane.default_size(settings) if size is None else size, wanted)
    return sizes


def ranks_of(values: Sequence[int | None]) -> msgspec.Struct:
    """A hit's LaneRanks from the statement's ranks array, in LANES order."""
    return _LaneRanks(**dict(zip(LANE_NAMES, values, strict=True)))


def rank_in(ranks: msgspec.Struct, lane: str) -> int | None:
    value: int | None = getattr(ranks, lane)
    return value


def weights(settings: SearchSettings) -> dict[str, float]:
    """Each lane's RRF weight, by lane name."""
    return {lane.name: lane.rrf_weight(settings) for lane in LANES}


def weight_parameters(settings: SearchSettings) -> dict[str, Any]:
    """The statement's lane parameters: the lanes' names and RRF weights, in LANES order."""
    return {
        "lane_names": list(LANE_NAMES),
        "lane_weights": [lane.rrf_weight(settings) for lane in LANES],
    }


def pools(sizes: Mapping[str, int], kind: str) -> dict[str, int]:
    """Each lane's candidates as a result of ``kind`` saw them: for a lane in parts (the
    keyword lane's memories and facts), the part that searches that kind."""
    found = {}
    for lane in LANES:
        parts = [param for param, serves in lane.sizes if kind in serves] or [lane.sizes[0][0]]
        found[lane.name] = sizes[parts[0]]
    return found
