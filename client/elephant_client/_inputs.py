"""Typed shapes of what the client sends (plain dicts; dates may be ``datetime``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal, NotRequired, TypedDict

When = datetime | str
"""A date: an aware ``datetime`` (sent as RFC 3339 UTC) or an ISO 8601 string."""

Scope = Literal["read", "write", "admin"]
Consistency = Literal["replica", "primary"]


class Turn(TypedDict):
    """One turn of a conversation or session."""

    speaker: str
    text: str
    timestamp: NotRequired[When | None]
    id: NotRequired[str | None]


class SearchFilters(TypedDict, total=False):
    source: str | Sequence[str]
    kind: Literal["window", "note", "fact"] | Sequence[Literal["window", "note", "fact"]]
    created_after: When
    created_before: When
    event_after: When
    event_before: When
    as_of: When
    include_expired: bool


class Lanes(TypedDict, total=False):
    """Candidates taken from each search lane (0 turns a lane off)."""

    windows: int
    facts: int
    keyword: int
    graph: int
    preferences: int


class Observation(TypedDict):
    content: str
    kind: NotRequired[str]


class Entity(TypedDict):
    name: str
    entity_type: NotRequired[str | None]
    domain: NotRequired[str | None]
    epistemic: NotRequired[str | None]
    observations: NotRequired[Sequence[str | Observation]]


class Relation(TypedDict):
    source: str
    relation_type: str
    target: str
    epistemic: NotRequired[str | None]
    valid_from: NotRequired[When | None]


class EntityObservations(TypedDict):
    """Observations to add to one existing entity."""

    entity: str
    contents: Sequence[str | Observation]


class RelationRef(TypedDict):
    source: str
    relation_type: str
    target: str


class ObservationRefs(TypedDict):
    """Observations of one entity, by text or id."""

    entity: str
    observations: Sequence[str]
