"""The entity lanes' statement parameters (sql/retrieval/entity_expansion_lane.sql,
sql/retrieval/entity_match_lane.sql).

The match lane looks for every 1-4 word span of the question as an entity key (the
keys the ingest grammar wrote, case-folded): the statement keeps those the tenant links
to, so no name list is read before the search and a lower-case name counts too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.config import SearchSettings
from app.services.graph.linking import query_candidates


def entity_lane_params(
    settings: SearchSettings, query: str, sizes: Mapping[str, int]
) -> dict[str, Any]:
    """Hub threshold, per-entity cap and the question's candidate keys (none while the
    match lane is off)."""
    matching = sizes["entity_match_memories"] + sizes["entity_match_facts"] > 0
    return {
        "entity_match_keys": query_candidates(query) if matching else [],
        "entity_expansion_per_entity": settings.entity_expansion_per_entity,
        "hub_mentions": settings.hub_mentions,
    }
