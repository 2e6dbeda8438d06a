"""Inputs of the graph operations: strict shapes whose descriptions an agent can act on."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.services.inputs import NON_BLANK, TEXT, Name, Text, When

NAME = Field(description="Entity name; case and spacing ignored.")
Statement = Annotated[str, Field(min_length=1, max_length=4000), NON_BLANK]
"""An observation, a decision or its reason: 1-4000 characters, not only whitespace."""
Reason = Annotated[str, Field(max_length=2000), TEXT]
"""Why something is no longer true (0-2000 characters)."""
Reference = Annotated[str, Field(min_length=1, max_length=4000), NON_BLANK]
"""An observation named by its text or its id."""


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class ObservationIn(_In):
    content: Statement = Field(description="One atomic statement.")
    kind: Text = Field(
        "note", description="note | decided | rejected | because | touches (default note)."
    )


class EntityIn(_In):
    name: Name = NAME
    entity_type: Text | None = Field(
        None,
        description="decision, concept, finding, rule, open-question, artifact, insight, task, "
        "event, thing, person, organization or place (new entities default to thing).",
    )
    domain: Text | None = Field(None, description="Subject domain (new entities: general).")
    epistemic: Text | None = Field(
        None, description="assertion | hypothesis | speculation | unknown (default unknown)."
    )
    observations: list[Statement | ObservationIn] = Field(
        default_factory=list, description="Statements about the entity (strings are notes)."
    )


class RelationIn(_In):
    source: Name = NAME
    relation_type: Annotated[str, Field(min_length=1, max_length=60), NON_BLANK] = Field(
        description="supports, contradicts, evolved_into, depends_on, exemplifies, part_of, "
        "caused_by, enables, supersedes, related_to, investigates, informs, uses, mentions, "
        "knows, works_at, lives_in, member_of (aliases such as requires are folded).",
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
