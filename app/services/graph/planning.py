"""Planning a graph write: the entities, relations and observations one call asks for,
validated and keyed before anything is embedded or written.

``plan_record`` checks the whole input (vocabulary, names, the call's size) and
returns a ``Plan``; the operations in `app.services.graph.operations` embed and
write it in one transaction. A later mention of an entity in the same call keeps
what an earlier one set; everything a call writes carries one timestamp.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime

from app.errors import InvalidInput
from app.services.graph import vocabulary as vocab
from app.services.graph.models import ObservationIn, RecordIn
from app.services.graph.store import Relation, entity_key
from app.services.runtime import Elephant


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


@dataclass
class EntityPlan:
    key: str
    name: str
    role: str | None
    domain: str | None
    epistemic: str | None


@dataclass
class ObservationPlan:
    entity: str  # key
    content: str
    kind: str

    @property
    def observation_key(self) -> str:
        text = " ".join(self.content.casefold().split())
        return hashlib.sha256(f"{self.entity}\x1f{self.kind}\x1f{text}".encode()).hexdigest()


@dataclass
class Plan:
    entities: dict[str, EntityPlan] = field(default_factory=dict)
    relations: list[Relation] = field(default_factory=list)
    observations: list[ObservationPlan] = field(default_factory=list)
    # One instant for everything a call writes, so the graph "as of" that instant
    # shows all of it or none of it.
    stamp: str = field(default_factory=lambda: now_iso())

    def referenced(self) -> list[str]:
        keys = list(self.entities)
        for relation in self.relations:
            keys += [relation.source, relation.target]
        keys += [observation.entity for observation in self.observations]
        return list(dict.fromkeys(keys))


def _observation_plan(item: str | ObservationIn, entity: str) -> ObservationPlan:
    if isinstance(item, str):
        item = ObservationIn(content=item)
    return ObservationPlan(entity, item.content, vocab.observation_kind(item.kind))


def plan_record(elephant: Elephant, request: RecordIn) -> Plan:
    domains = elephant.settings.graph.domains
    plan = Plan()
    for index, item in enumerate(request.entities):
        key = required_key(item.name, f"entities[{index}].name")
        previous = plan.entities.get(key)
        plan.entities[key] = EntityPlan(
            key=key,
            name=previous.name if previous else item.name,
            role=vocab.role(item.entity_type) if item.entity_type else _was(previous, "role"),
            domain=vocab.domain(item.domain, domains) if item.domain else _was(previous, "domain"),
            epistemic=(
                vocab.epistemic(item.epistemic) if item.epistemic else _was(previous, "epistemic")
            ),
        )
        plan.observations += [_observation_plan(obs, key) for obs in item.observations]
    stamp = plan.stamp
    for index, relation in enumerate(request.relations):
        source = required_key(relation.source, f"relations[{index}].source")
        target = required_key(relation.target, f"relations[{index}].target")
        if source == target:
            raise InvalidInput(f"relations[{index}]: a relation needs two different entities")
        plan.relations.append(
            Relation(
                source,
                vocab.relation_type(relation.relation_type),
                target,
                {
                    "valid_from": (
                        relation.valid_from.isoformat() if relation.valid_from else stamp
                    ),
                    "recorded_at": stamp,
                    "epistemic": vocab.epistemic(relation.epistemic),
                },
            )
        )
    for index, group in enumerate(request.observations):
        key = required_key(group.entity, f"observations[{index}].entity")
        plan.observations += [_observation_plan(obs, key) for obs in group.contents]
    total = len(plan.entities) + len(plan.relations) + len(plan.observations)
    limit = elephant.settings.graph.max_items
    if total > limit:
        raise InvalidInput(
            f"{total} items in one call; the limit is {limit} (graph.max_items): split the call"
        )
    return plan


def _was(previous: EntityPlan | None, attribute: str) -> str | None:
    """A later mention of the same entity in one call keeps what an earlier one set."""
    return None if previous is None else getattr(previous, attribute)


def required_key(name: str, where: str) -> str:
    key = entity_key(name)
    if not key:
        raise InvalidInput(f"{where}: an entity name cannot be empty")
    return key
