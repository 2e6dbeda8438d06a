"""Inputs of the graph operations: strict shapes whose descriptions an agent can act on."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.services.inputs import parse_when

NAME = Field(min_length=1, max_length=200, description="Entity name; case and spacing ignored.")


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class ObservationIn(_In):
    content: str = Field(min_length=1, max_length=4000, description="One atomic statement.")
    kind: str = Field(
        "note", description="note | decided | rejected | because | touches (default note)."
    )


class EntityIn(_In):
    name: str = NAME
    entity_type: str | None = Field(
        None,
        description="decision, concept, finding, rule, open-question, artifact, insight, task, "
        "event, thing, person, organization or place (new entities default to thing).",
    )
    domain: str | None = Field(None, description="Subject domain (new entities: general).")
    epistemic: str | None = Field(
        None, description="assertion | hypothesis | speculation | unknown (default unknown)."
    )
    observations: list[str | ObservationIn] = Field(
        default_factory=list, description="Statements about the entity (strings are notes)."
    )


class RelationIn(_In):
    source: str = NAME
    relation_type: str = Field(
        min_length=1,
        max_length=60,
        description="supports, contradicts, evolved_into, depends_on, exemplifies, part_of, "
        "caused_by, enables, supersedes, related_to, investigates, informs, uses, mentions, "
        "knows, works_at, lives_in, member_of (aliases such as requires are folded).",
    )
    target: str = NAME
    epistemic: str | None = None
    valid_from: datetime | None = Field(None, description="When it became true (default now).")

    _parse_when = field_validator("valid_from", mode="before")(parse_when)


class ObservationsIn(_In):
    entity: str = NAME
    contents: list[str | ObservationIn] = Field(min_length=1)


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
    name: str = NAME
    decided: str = Field(min_length=1, max_length=4000, description="What was decided.")
    because: str = Field(min_length=1, max_length=4000, description="Why.")
    rejected: list[str] = Field(
        default_factory=list, description="Alternatives considered and rejected, one each."
    )
    domain: str | None = None
    supersedes: str | None = Field(
        None, max_length=200, description="Name of an earlier decision this one replaces."
    )
    epistemic: str | None = Field("assertion", description="Default assertion.")

    @field_validator("rejected")
    @classmethod
    def _rejected(cls, value: list[str]) -> list[str]:
        cleaned = [item.strip() for item in value]
        if any(not item or len(item) > 4000 for item in cleaned):
            raise ValueError("each rejected alternative needs 1-4000 characters")
        return cleaned


class ReviseIn(_In):
    entity: str = NAME
    superseded_by: str = Field(
        min_length=1, max_length=200, description="Name of the entity that replaces it."
    )
    observations: list[str] = Field(
        default_factory=list,
        description="Observations (text or id) of the entity that are no longer true; "
        "empty: the whole entity is superseded.",
    )
    superseding_entity: EntityIn | None = Field(
        None, description="Create or update the replacing entity in the same transaction."
    )
    reason: str | None = Field(None, max_length=2000)


class ObservationRefs(_In):
    entity: str = NAME
    observations: list[str] = Field(min_length=1, description="Observation texts or ids.")


class RelationRef(_In):
    source: str = NAME
    relation_type: str = Field(min_length=1, max_length=60)
    target: str = NAME


# ------------------------------------------------------------------ list bodies (HTTP)

EntityName = Annotated[str, Field(min_length=1, max_length=200)]


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
    reason: str | None = Field(None, max_length=2000, description="Why they are no longer true.")


class RelationRefsIn(_In):
    relations: list[RelationRef] = Field(min_length=1)


class NamesIn(_In):
    names: list[EntityName] = Field(min_length=1, max_length=200, description="Entity names.")


class OpenIn(NamesIn):
    as_of: datetime | None = Field(
        None, description="The graph as it was at this instant (default: now, current only)."
    )

    _parse_when = field_validator("as_of", mode="before")(parse_when)
