"""The lane registry (app/services/retrieval/lanes.py LANES) and the search statement
(sql/retrieval/hybrid_search.sql) name the same lanes: a lane added to one and not the
other fails here, not as a silently unweighted lane at query time."""

from __future__ import annotations

import re

from app.config import SearchSettings
from app.db.resources import load_sql
from app.services.retrieval.lanes import LANE_NAMES, LANES, weight_parameters

UNION_LINE = re.compile(r"SELECT [^\n]*?, '(?P<lane>[a-z_]+)'(?:::text AS lane)?, rank FROM \w+")


def _cte(text: str, name: str) -> str:
    found = re.search(rf"^{name} AS (?:MATERIALIZED )?\(\n(.*?)^\)", text, re.M | re.S)
    assert found is not None, f"no CTE {name} in the statement"
    return found.group(1)


def statement_lanes() -> list[str]:
    text = load_sql("retrieval/hybrid_search.sql")
    lines = _cte(text, "lanes") + _cte(text, "all_lanes")
    return [match["lane"] for match in UNION_LINE.finditer(lines)]


def test_the_statement_unions_exactly_the_registered_lanes_once_each() -> None:
    found = statement_lanes()
    assert sorted(found) == sorted(LANE_NAMES), (found, LANE_NAMES)
    assert len(found) == len(set(found))


def test_every_lane_has_its_two_settings_named_after_it() -> None:
    fields = SearchSettings.model_fields
    for lane in LANES:
        assert lane.name in fields, f"search.{lane.name} (the {lane.name} lane's size)"
        assert f"{lane.name}_weight" in fields, f"search.{lane.name}_weight"


def test_every_size_parameter_is_read_by_the_statement() -> None:
    text = load_sql("retrieval/hybrid_search.sql")
    spliced = text + "".join(
        load_sql(f"retrieval/{name}.sql")
        for name in (
            "window_lane",
            "keyword_bm25_tenant",
            "entity_expansion_lane",
            "entity_match_lane",
            "neighbour_lane",
            "timeline_lane",
        )
    )
    for lane in LANES:
        for param, _kinds in lane.sizes:
            assert f"%({param})s" in spliced, f"{lane.name}: %({param})s"


def test_weights_travel_in_registry_order() -> None:
    settings = SearchSettings(graph_weight=0.5, preferences_weight=2.0)
    params = weight_parameters(settings)
    assert params["lane_names"] == list(LANE_NAMES)
    by_name = dict(zip(params["lane_names"], params["lane_weights"], strict=True))
    assert by_name["graph"] == 0.5
    assert by_name["preferences"] == 2.0
    assert by_name["windows"] == 1.0
