"""Copy tenant graphs from one backend into the other (``elephant graph migrate --to``).

Entities, current and closed relations, with every property, one transaction
per tenant (read from the source and written to the target on the same tenant
connection: a tenant is copied whole or not at all). Idempotent: an entity
already in the target is updated only where it differs, a relation already
there (same triple and validity) is not added again, so a second run copies
nothing and a run after more writes copies only those. The source is left as
it is (erasure reaches both backends). After the copy, ``graph.backend`` set
to the target makes the application use it.

Observations need no copy: they are rows of ``facts`` whatever the backend.
Run it while the graph is not written to for an exact copy; a write during the
run is picked up by running it again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, TypeVar

from app.config import validate_tenant_id
from app.db.runtime import Connection, Database
from app.errors import CapabilityMissing, InvalidInput
from app.services.graph.backend import Backend, present
from app.services.graph.store import Entity, GraphStore, Relation, Triple
from app.services.runtime import Elephant

T = TypeVar("T")
PAGE = 1000  # entities per read (and their relations)
_TIMES = ("created_at", "updated_at", "valid_from", "valid_to", "recorded_at")


@dataclass(frozen=True, slots=True)
class TenantCopy:
    """What one tenant's copy did (``existing``: already in the target as in the source)."""

    tenant: str
    entities_copied: int = 0
    entities_updated: int = 0
    entities_existing: int = 0
    relations_copied: int = 0
    relations_existing: int = 0


@dataclass(frozen=True, slots=True)
class GraphTransfer:
    source: Backend
    target: Backend
    tenants: list[TenantCopy]
    entities_copied: int = field(init=False)
    relations_copied: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "entities_copied", sum(t.entities_copied for t in self.tenants))
        object.__setattr__(self, "relations_copied", sum(t.relations_copied for t in self.tenants))


def migrate_graph(elephant: Elephant, target: Backend, tenant: str | None = None) -> GraphTransfer:
    """Copy every tenant's graph (or ``tenant``'s) from the other backend into ``target``."""
    if target not in ("age", "relational"):
        raise InvalidInput(f"unknown graph backend {target!r}: use age or relational")
    source: Backend = "relational" if target == "age" else "age"
    if "age" not in present(elephant.db.capabilities):
        raise CapabilityMissing(
            "graph migrate copies between Apache AGE and the relational tables, and this "
            "Postgres has no AGE: there is nothing to copy from or into"
        )
    if tenant is not None:
        try:
            validate_tenant_id(tenant)
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None
    tenants = [tenant] if tenant is not None else _tenants(elephant.db)
    stores = elephant.graph_store(source), elephant.graph_store(target)
    return GraphTransfer(
        source=source, target=target, tenants=[_copy(elephant, *stores, t) for t in tenants]
    )


def _copy(elephant: Elephant, source: GraphStore, target: GraphStore, tenant: str) -> TenantCopy:
    with elephant.db.tenant(tenant) as conn:
        if not source.exists(conn, tenant):
            return TenantCopy(tenant)
    target.ensure(tenant)  # an AGE graph is provisioned outside the tenant transaction
    with elephant.db.tenant(tenant) as conn:
        entities = {e.key: e for chunk in entity_pages(source, conn, tenant) for e in chunk}
        counts = _copy_entities(conn, tenant, target, list(entities.values()))
        relations: dict[tuple[Any, ...], Relation] = {}
        for keys in _chunks(list(entities)):
            for relation in source.relations(conn, tenant, keys, active_only=False):
                relations.setdefault(_signature(relation), relation)
        copied, existing = _copy_relations(conn, tenant, target, list(relations.values()))
    return replace(counts, tenant=tenant, relations_copied=copied, relations_existing=existing)


def _copy_entities(
    conn: Connection, tenant: str, target: GraphStore, entities: Sequence[Entity]
) -> TenantCopy:
    created = updated = same = 0
    for chunk in _chunks(entities):
        there = target.entities(conn, tenant, [e.key for e in chunk])
        new = [e for e in chunk if e.key not in there]
        changed = [e for e in chunk if e.key in there and _same(there[e.key]) != _same(e)]
        target.create_entities(conn, tenant, new)
        target.update_entities(conn, tenant, changed)
        created, updated = created + len(new), updated + len(changed)
        same += len(chunk) - len(new) - len(changed)
    return TenantCopy(tenant, created, updated, same)


def _copy_relations(
    conn: Connection, tenant: str, target: GraphStore, relations: Sequence[Relation]
) -> tuple[int, int]:
    """Relations not in the target: by triple and validity; a current one also not when
    the target has that triple current already (one current relation per triple)."""
    keys = sorted({r.source for r in relations} | {r.target for r in relations})
    there: set[tuple[Any, ...]] = set()
    current: set[Triple] = set()
    for some in _chunks(keys):
        for relation in target.relations(conn, tenant, some, active_only=False):
            there.add(_signature(relation))
            if relation.active:
                current.add(relation.triple)
    missing = []
    for relation in relations:
        if _signature(relation) in there or (relation.active and relation.triple in current):
            continue
        missing.append(relation)
        if relation.active:
            current.add(relation.triple)
    for batch in _chunks(missing):
        target.create_relations(conn, tenant, batch)
    return len(missing), len(relations) - len(missing)


def entity_pages(store: GraphStore, conn: Connection, tenant: str) -> Iterator[list[Entity]]:
    offset = 0
    while True:
        chunk, _ = store.page(conn, tenant, offset, PAGE)
        if not chunk:
            return
        yield chunk
        offset += len(chunk)


def _chunks(items: Sequence[T]) -> Iterator[list[T]]:
    for start in range(0, len(items), PAGE):
        yield list(items[start : start + PAGE])


def _instant(value: Any) -> Any:
    """Two spellings of one instant compare equal (AGE keeps the string it was given, the
    relational store answers in UTC)."""
    if not isinstance(value, str):
        return value
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return value
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(UTC)


def _same(entity: Entity) -> Entity:
    return replace(entity, **{name: _instant(getattr(entity, name)) for name in _TIMES[:4]})


def _signature(relation: Relation) -> tuple[Any, ...]:
    props = relation.properties
    return (*relation.triple, *(_instant(props.get(name)) for name in _TIMES[2:]))


def _tenants(db: Database) -> list[str]:
    """Every tenant, as the migrator. A table owner that is not a superuser is held to
    row-level security on a FORCEd table (tenants is): FORCE is lifted for this one
    statement, inside the transaction, and put back (as migration 0007 does)."""
    with db.admin_connection() as conn, conn.transaction():
        row = conn.execute(
            "SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        bypass = bool(row and row[0])
        if not bypass:
            conn.execute("ALTER TABLE tenants NO FORCE ROW LEVEL SECURITY")
        tenants = [str(r[0]) for r in conn.execute("SELECT id FROM tenants ORDER BY id")]
        if not bypass:
            conn.execute("ALTER TABLE tenants FORCE ROW LEVEL SECURITY")
    return tenants
