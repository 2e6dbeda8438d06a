"""What the graph services need from a graph backend, and the shapes they exchange.

Apache AGE is the implementation today (`app.services.graph.age`); a relational
one for Postgres services without AGE can implement the same protocol. Every
method works inside the caller's tenant transaction, so graph writes commit or
roll back together with the observation rows in `facts`.
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

    def properties(self) -> dict[str, Any]:
        """The vertex properties stored in the graph (unset ones left out)."""
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass(frozen=True)
class Relation:
    source: str  # entity keys
    relation_type: str
    target: str
    properties: dict[str, Any] = field(default_factory=dict)

    @property
    def triple(self) -> tuple[str, str, str]:
        return (self.source, self.relation_type, self.target)

    @property
    def active(self) -> bool:
        return self.properties.get("valid_to") is None


class GraphStore(Protocol):
    """Entities (by normalised key) and typed, time-bounded relations of one tenant."""

    def ensure(self, tenant: str) -> None:
        """Create the tenant's graph if it does not exist (outside any tenant transaction)."""

    def exists(self, conn: Connection, tenant: str) -> bool: ...

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
        self,
        conn: Connection,
        tenant: str,
        triples: Sequence[tuple[str, str, str]],
        valid_to: str,
    ) -> int: ...

    def delete_relations(
        self, conn: Connection, tenant: str, triples: Sequence[tuple[str, str, str]]
    ) -> int: ...

    def find(
        self,
        conn: Connection,
        tenant: str,
        text_keys: Sequence[str],
        *,
        domain: str | None,
        role: str | None,
    ) -> list[Entity]:
        """Entities whose key contains one of text_keys, or is contained in one."""
        ...

    def page(
        self, conn: Connection, tenant: str, offset: int, limit: int
    ) -> tuple[list[Entity], int]: ...


def entity_key(name: str) -> str:
    """Case and runs of spaces do not distinguish two entity names."""
    return " ".join(name.casefold().split())
