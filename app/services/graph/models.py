"""Inputs of the graph operations: strict shapes whose descriptions an agent can act on,
and the typed results the operations return (what the API, the MCP tools and the CLI send)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Self, cast

import msgspec
from msgspec import UNSET, UnsetType
from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.protocol import JSONObject
from app.services.common.inputs import NON_BLANK, TEXT, Name, Text, When
from app.services.graph import vocabulary as vocab
from app.services.graph.store import Entity, Relation

NAME = Field(description="Entity name; case and spacing ignored.")
Statement = Annotated[str, Field(min_length=1, max_length=4000), NON_BLANK]
"""An observation, a decision or its reason: 1-4000 characters, not only whitespace."""
Reason = Annotated[str, Field(max_length=2000), TEXT]
"""Why something is no longer true (0-2000 characters)."""
Reference = Annotated[str, Field(min_length=1, max_length=4000), NON_BLANK]
"""An observation named by its text or its id."""


def _alternatives(names: tuple[str, ...]) -> str:
    return " | ".join(names)


def _listed(names: tuple[str, ...]) -> str:
    return f"{', '.join(names[:-1])} or {names[-1]}"


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class ObservationIn(_In):
    content: Statement = Field(description="One atomic statement.")
    kind: Text = Field(
        "note", description=f"{_alternatives(vocab.OBSERVATION_KINDS)} (default note)."
    )


class EntityIn(_In):
    name: Name = NAME
    entity_type: Text | None = Field(
        None,
        description=f"{_listed(vocab.ROLES)} (new entities default to thing).",
    )
    domain: Text | None = Field(None, description="Subject domain (new entities: general).")
    epistemic: Text | None = Field(
        None,
        description=f"{_alternatives(vocab.EPISTEMIC)} (default {vocab.DEFAULT_EPISTEMIC}).",
    )
    observations: list[Statement | ObservationIn] = Field(
        default_factory=list, description="Statements about the entity (strings are notes)."
    )


class RelationIn(_In):
    source: Name = NAME
    relation_type: Annotated[str, Field(min_length=1, max_length=60), NON_BLANK] = Field(
        description=f"{', '.join(vocab.RELATIONS)} (aliases such as requires are folded).",
    )
    target: Name = NAME
    epistemic: Text | None = None
    valid_from: When | None = Field(None, description="When it became true (default now).")


class ObservationsIn(_In):
    entity: Name = NAME
    contents: list[Statement | ObservationIn] = Field(min_length=1)


class RecordIn(_In):
    entities: list[EntityIn] = Field(default_factory=list)
    relations: list[RelationIn] = Field(default_factory=list)
    observations: list[ObservationsIn] = Field(default_factory=list)

    @model_validator(mode="after")
    def _something(self) -> RecordIn:
        if not (self.entities or self.relations or self.observations):
            raise ValueError("record needs at least one entity, relation or observation")
        return self


class DecisionIn(_In):
    name: Name = NAME
    decided: Statement = Field(description="What was decided.")
    because: Statement = Field(description="Why.")
    rejected: list[Statement] = Field(
        default_factory=list, description="Alternatives considered and rejected, one each."
    )
    domain: Text | None = None
    supersedes: Name | None = Field(
        None, description="Name of an earlier decision this one replaces."
    )
    epistemic: Text | None = Field("assertion", description="Default assertion.")


class ReviseIn(_In):
    entity: Name = NAME
    superseded_by: Name = Field(description="Name of the entity that replaces it.")
    observations: list[Reference] = Field(
        default_factory=list,
        description="Observations (text or id) of the entity that are no longer true; "
        "empty: the whole entity is superseded.",
    )
    superseding_entity: EntityIn | None = Field(
        None, description="Create or update the replacing entity in the same transaction."
    )
    reason: Reason | None = None


class ObservationRefs(_In):
    entity: Name = NAME
    observations: list[Reference] = Field(min_length=1, description="Observation texts or ids.")


class RelationRef(_In):
    source: Name = NAME
    relation_type: Annotated[str, Field(min_length=1, max_length=60), NON_BLANK]
    target: Name = NAME


# ------------------------------------------------------------------ list bodies (HTTP)

EntityName = Name


class EntitiesIn(_In):
    entities: list[EntityIn] = Field(min_length=1, description="Entities to create or merge.")


class RelationsIn(_In):
    relations: list[RelationIn] = Field(
        min_length=1, description="Relations between existing entities."
    )


class AddObservationsIn(_In):
    observations: list[ObservationsIn] = Field(
        min_length=1, description="Per entity, the observations to add."
    )


class ObservationRefsIn(_In):
    observations: list[ObservationRefs] = Field(
        min_length=1, description="Per entity, its observations by text or id."
    )


class InvalidateIn(ObservationRefsIn):
    reason: Reason | None = Field(None, description="Why they are no longer true.")


class RelationRefsIn(_In):
    relations: list[RelationRef] = Field(min_length=1)


class NamesIn(_In):
    names: list[EntityName] = Field(min_length=1, max_length=200, description="Entity names.")


class OpenIn(NamesIn):
    as_of: When | None = Field(
        None, description="The graph as it was at this instant (default: now, current only)."
    )


# ------------------------------------------------------------------ results
#
# Frozen dataclasses, serialised by Litestar (msgspec) and documented in the OpenAPI
# schema. A key present only sometimes is a msgspec Struct field defaulting to UNSET,
# which msgspec leaves out of the JSON and Litestar documents as not required (its
# dataclass schema cannot show UNSET): an observation's valid_to and status_now (only
# in a read "as of" an instant), a revision's relations_closed (only when the whole
# entity was superseded) and a decision's revision fields (only when it supersedes
# one). RecordResult is a Struct so that those two can extend it. Dates are the ISO
# strings stored in the graph.


class GraphResult:
    """A graph read's or write's typed result (dataclass or msgspec Struct)."""

    __slots__ = ()

    def to_dict(self) -> JSONObject:
        """The JSON form, exactly what the API sends (for the MCP tools and the CLI)."""
        return cast(JSONObject, msgspec.to_builtins(self))


@dataclass(frozen=True, slots=True)
class GraphEntity(GraphResult):
    """An entity: its name, role (entity_type), domain, epistemic status and validity."""

    name: str
    entity_type: str
    domain: str
    epistemic: str
    source: str
    valid_from: str | None
    valid_to: str | None
    created_at: str | None
    updated_at: str | None

    @classmethod
    def of(cls, entity: Entity, **more: Any) -> Self:
        """The entity as a read shows it (``more``: the fields a subclass adds)."""
        return cls(
            name=entity.name,
            entity_type=entity.role,
            domain=entity.domain,
            epistemic=entity.epistemic,
            source=entity.source,
            valid_from=entity.valid_from,
            valid_to=entity.valid_to,
            created_at=entity.created_at,
            updated_at=entity.updated_at,
            **more,
        )


@dataclass(frozen=True, slots=True)
class GraphRelation(GraphResult):
    """A relation between two entities (by name), with its validity and epistemic status."""

    source: str
    relation_type: str
    target: str
    valid_from: str | None
    valid_to: str | None
    epistemic: str

    @classmethod
    def of(cls, relation: Relation, names: dict[str, str]) -> Self:
        """``names``: entity key to display name (a key without one is shown as is)."""
        props = relation.properties
        return cls(
            source=names.get(relation.source, relation.source),
            relation_type=relation.relation_type,
            target=names.get(relation.target, relation.target),
            valid_from=props.get("valid_from"),
            valid_to=props.get("valid_to"),
            epistemic=props.get("epistemic", vocab.DEFAULT_EPISTEMIC),
        )


class GraphObservation(GraphResult, msgspec.Struct, frozen=True):
    """An observation of an entity; valid_to and status_now only in a read "as of"."""

    id: str
    content: str
    kind: str
    source: str | None
    valid_from: str | None
    recorded_at: str
    valid_to: Annotated[
        str | UnsetType | None,
        msgspec.Meta(description="End of validity; only when the read is as of an instant."),
    ] = UNSET
    status_now: Annotated[
        str | UnsetType,
        msgspec.Meta(description="Its status today; only when the read is as of an instant."),
    ] = UNSET


@dataclass(frozen=True, slots=True)
class GraphNode(GraphEntity):
    """An entity with (up to a bound) its observations and relations, and their totals."""

    observations: list[GraphObservation]
    observations_total: int
    relations: list[GraphRelation]
    relations_total: int
    relations_truncated: bool


@dataclass(frozen=True, slots=True)
class EntitySummary(GraphResult):
    """An entity in a summary page: counts instead of observations and relations."""

    name: str
    entity_type: str
    domain: str
    epistemic: str
    observations: int
    relations: int


class RecordResult(GraphResult, msgspec.Struct, frozen=True):
    """What a write did: entities created or merged, relations and observations added or
    already there (duplicates are skipped), and the ids of the new observations."""

    entities_created: list[str]
    entities_merged: list[str]
    relations_created: int
    relations_existing: int
    observations_added: int
    observations_duplicate: int
    observation_ids: list[str]


class RevisionResult(RecordResult, frozen=True, kw_only=True):
    """A revision: what it recorded (the supersedes link, the replacing entity), then what
    it closed."""

    relations_closed: Annotated[
        int | UnsetType,
        msgspec.Meta(description="Relations ended; only when the whole entity is superseded."),
    ] = UNSET
    revised: str
    superseded_by: str
    observations_invalidated: int


class DecisionResult(RecordResult, frozen=True, kw_only=True):
    """A decision; one that supersedes an earlier decision also reports that revision."""

    relations_closed: Annotated[
        int | UnsetType, msgspec.Meta(description="Only when the decision supersedes another.")
    ] = UNSET
    revised: Annotated[
        str | UnsetType, msgspec.Meta(description="The superseded decision, if any.")
    ] = UNSET
    superseded_by: Annotated[
        str | UnsetType, msgspec.Meta(description="This decision, when it supersedes another.")
    ] = UNSET
    observations_invalidated: Annotated[
        int | UnsetType, msgspec.Meta(description="Only when the decision supersedes another.")
    ] = UNSET


@dataclass(frozen=True, slots=True)
class ObservationsInvalidated(GraphResult):
    observations_invalidated: int


@dataclass(frozen=True, slots=True)
class RelationsInvalidated(GraphResult):
    relations_invalidated: int


@dataclass(frozen=True, slots=True)
class ObservationsDeleted(GraphResult):
    observations_deleted: int


@dataclass(frozen=True, slots=True)
class EntitiesDeleted(GraphResult):
    entities_deleted: int
    missing: list[str]


@dataclass(frozen=True, slots=True)
class RelationsDeleted(GraphResult):
    relations_deleted: int


@dataclass(frozen=True, slots=True)
class OpenedNodes(GraphResult):
    """The entities found, in the order asked, and the names not in the graph."""

    entities: list[GraphNode]
    missing: list[str]


@dataclass(frozen=True, slots=True)
class NodeSearchResult(GraphResult):
    """One page of matches; total_matched and truncated say what was left out."""

    query: str
    entities: list[GraphNode]
    total_matched: int
    truncated: bool


@dataclass(frozen=True, slots=True)
class Neighbourhood(GraphResult):
    """Nodes and edges around the seeds; truncated when the limit left nodes out."""

    nodes: list[GraphEntity]
    edges: list[GraphRelation]
    truncated: bool
