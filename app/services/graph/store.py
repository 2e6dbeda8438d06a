"""What the graph services need from a graph backend, and the shapes they exchange.

Two implementations: Apache AGE (`app.services.graph.age`, one graph per
tenant) and ordinary tables (`app.services.graph.relational`, for Postgres
services without AGE); `app.services.graph.backend` picks one. Every method
but ``ensure`` works inside the caller's tenant transaction, so graph writes
commit or roll back together with the observation rows in `facts`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.db.runtime import Connection


@dataclass(frozen=True, slots=True)
class RelationCounts:
    current: int
    closed: int


@dataclass(frozen=True, slots=True)
class GraphCounts:
    """Entities, and relations per type (current / closed), for stats."""

    entities: int
    relations: dict[str, RelationCounts]

    @classmethod
    def tally(cls, entities: int, rows: Sequence[tuple[Any, ...]]) -> GraphCounts:
        """From (relation type, is current, count) rows, whichever backend counted them."""
        by_type: dict[str, dict[bool, int]] = {}
        for relation_type, current, count in rows:
            by_type.setdefault(str(relation_type), {True: 0, False: 0})[bool(current)] += int(count)
        return cls(
            entities=entities,
            relations={
                name: RelationCounts(current=states[True], closed=states[False])
                for name, states in by_type.items()
            },
        )


@dataclass(frozen=True)
class Entity:
    key: str
    name: str
    role: str
    domain: str
    epistemic: str
    source: str = "record"
    created_at: str | None = None
    updated_at: str | None = None
    valid_from: str | None = None
    valid_to: str | None = None

    def properties(self) -> dict[str, str]:
        """The vertex properties stored in the graph (unset ones left out)."""
        return {k: v for k, v in self.__dict__.items() if v is not None}


Triple = tuple[str, str, str]
"""A relation by name: (source key, relation type, target key)."""


@dataclass(frozen=True)
class Relation:
    source: str  # entity keys
    relation_type: str
    target: str
    properties: dict[str, Any] = field(default_factory=dict)

    @property
    def triple(self) -> Triple:
        return (self.source, self.relation_type, self.target)

    @property
    def active(self) -> bool:
        return self.properties.get("valid_to") is None


@dataclass(frozen=True, slots=True)
class Walk:
    """A bounded breadth-first neighbourhood: entities in walk order (seeds first, then by
    distance), the current relations among them, and whether the node limit cut it."""

    entities: dict[str, Entity]
    relations: list[Relation]
    truncated: bool


class GraphStore(Protocol):
    """Entities (by normalised key) and typed, time-bounded relations of one tenant."""

    backend: str  # "age" or "relational": what health and the CLI report

    def ensure(self, tenant: str) -> None:
        """Create the tenant's graph if it does not exist (outside any tenant transaction)."""

    def provision(self, conn: Connection, tenant: str) -> None:
        """Create the tenant's graph if it does not exist, inside ``conn``'s transaction as
        the migrator (``Database.provisioned_tenant``): it commits or rolls back with the
        rows written after it, so a failed import leaves no graph."""

    def forget(self, tenant: str) -> None:
        """The tenant was erased: drop whatever this process remembers of its graph."""

    def exists(self, conn: Connection, tenant: str) -> bool: ...

    def counts(self, conn: Connection, tenant: str) -> GraphCounts: ...

    def entities(self, conn: Connection, tenant: str, keys: Sequence[str]) -> dict[str, Entity]: ...

    def create_entities(
        self, conn: Connection, tenant: str, entities: Sequence[Entity]
    ) -> None: ...

    def update_entities(
        self, conn: Connection, tenant: str, entities: Sequence[Entity]
    ) -> None: ...

    def delete_entities(self, conn: Connection, tenant: str, keys: Sequence[str]) -> int: ...

    def relations(
        self, conn: Connection, tenant: str, keys: Sequence[str], *, active_only: bool
    ) -> list[Relation]:
        """Every relation touching one of the keys, both directions."""
        ...

    def entities_with_relations(
        self, conn: Connection, tenant: str, keys: Sequence[str], *, active_only: bool
    ) -> tuple[dict[str, Entity], list[Relation]]:
        """The entities among the keys and the relations touching them, in one read."""
        ...

    def create_relations(
        self, conn: Connection, tenant: str, relations: Sequence[Relation]
    ) -> None: ...

    def invalidate_relations(
        self, conn: Connection, tenant: str, triples: Sequence[Triple], valid_to: str
    ) -> int: ...

    def delete_relations(self, conn: Connection, tenant: str, triples: Sequence[Triple]) -> int: ...

    def candidates(
        self, conn: Connection, tenant: str, text: str, *, domain: str | None, role: str | None
    ) -> list[Entity]:
        """Entities of the domain and role (None: any) whose key contains ``text`` or is
        contained in it; ``find`` keeps those that match as a key or as whole words."""
        ...

    def page(
        self, conn: Connection, tenant: str, offset: int, limit: int
    ) -> tuple[list[Entity], int]: ...

    def walk(
        self, conn: Connection, tenant: str, keys: Sequence[str], hops: int, limit: int
    ) -> Walk:
        """From the seed keys along current relations (both directions), at most ``hops``
        steps and ``limit`` entities; relations between two entities of the last step are
        left out (no entity of the last step is expanded)."""
        ...

    def named(self, conn: Connection, tenant: str, keys: Sequence[str], pattern: str) -> set[str]:
        """Keys among ``keys``, and keys of entities whose name matches the POSIX regular
        expression ``pattern`` case-insensitively (erasure of a subject)."""
        ...

    def count_relations(self, conn: Connection, tenant: str, keys: Sequence[str]) -> int:
        """Relations (current and closed) touching one of the keys."""
        ...


def entity_key(name: str) -> str:
    """Case and runs of spaces do not distinguish two entity names."""
    return " ".join(name.casefold().split())


def find(
    store: GraphStore,
    conn: Connection,
    tenant: str,
    text_keys: Sequence[str],
    *,
    domain: str | None,
    role: str | None,
) -> list[Entity]:
    """Entities whose key contains one of text_keys, or stands in one as whole words (a
    key of three characters or more), once each, whichever backend looked them up."""
    found: dict[str, Entity] = {}
    for text in dict.fromkeys(text_keys):
        for entity in store.candidates(conn, tenant, text, domain=domain, role=role):
            if text in entity.key or _contains_words(text, entity.key):
                found[entity.key] = entity
    return list(found.values())


def _contains_words(text: str, key: str) -> bool:
    return len(key) >= 3 and f" {key} " in f" {text} "
