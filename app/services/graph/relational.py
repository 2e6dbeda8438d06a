"""The graph in ordinary tables: `kg_entities` and `kg_relations` (migration 0008).

For Postgres services without Apache AGE. The same protocol, vocabulary and
transaction as the AGE store: every statement runs on the caller's tenant
connection, names the tenant explicitly (so the (tenant_id, key) indexes are
used; row-level security refuses any other tenant anyway) and passes every
value as a parameter: no text is ever spliced into a statement here. The statements
are sql/graph/kg_*.sql. Batches
travel as arrays (``unnest``), one statement per batch. Timestamps are
timestamptz columns, exchanged with the services as ISO 8601 strings in UTC,
as the AGE store exchanges them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from psycopg import sql

from app.db.resources import fragment
from app.db.runtime import Connection
from app.services.graph.store import Entity, GraphCounts, Relation, Triple, Walk

# Edge properties kept in columns (the code filters on them); any other goes to `properties`.
RELATION_FIELDS = ("valid_from", "valid_to", "recorded_at", "epistemic", "source")
_TIMES = frozenset({"valid_from", "valid_to", "recorded_at"})
# Rows a walk may produce before it stops, whatever the hops: a guard for dense graphs
# (the recursive CTE is evaluated only as far as this LIMIT reads it).
WALK_CAP = 50_000


def _statement(name: str) -> str:
    """``sql/graph/kg_<name>.sql``: the store's statements, each documented there."""
    return fragment(f"graph/kg_{name}.sql")


def _instant(value: Any) -> datetime | None:
    """An ISO 8601 string (or datetime) as an aware datetime; naive means UTC."""
    if value is None:
        return None
    parsed = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _text(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat()


def _entity(row: Sequence[Any]) -> Entity:
    key, name, role, domain, epistemic, source, created, updated, start, end = row
    return Entity(
        key=key, name=name, role=role, domain=domain, epistemic=epistemic, source=source,
        created_at=_text(created), updated_at=_text(updated), valid_from=_text(start),
        valid_to=_text(end),
    )  # fmt: skip


def _relation(row: Sequence[Any]) -> Relation:
    source, relation_type, target, start, end, recorded, epistemic, origin, extra = row
    known = {
        "valid_from": _text(start),
        "valid_to": _text(end),
        "recorded_at": _text(recorded),
        "epistemic": epistemic,
        "source": origin,
    }
    properties = {**(extra or {}), **{k: v for k, v in known.items() if v is not None}}
    return Relation(source, relation_type, target, properties)


def _entity_arrays(entities: Sequence[Entity]) -> list[list[Any]]:
    return [
        [e.key for e in entities],
        [e.name for e in entities],
        [e.role for e in entities],
        [e.domain for e in entities],
        [e.epistemic for e in entities],
        [e.source for e in entities],
        [_instant(e.created_at) for e in entities],
        [_instant(e.updated_at) for e in entities],
        [_instant(e.valid_from) for e in entities],
        [_instant(e.valid_to) for e in entities],
    ]


def _triple_arrays(triples: Sequence[Triple]) -> list[list[str]]:
    return [[t[0] for t in triples], [t[1] for t in triples], [t[2] for t in triples]]


class RelationalGraphStore:
    """Entities and relations of every tenant in two tables, under row-level security."""

    backend = "relational"

    # ------------------------------------------------------------ provisioning

    def ensure(self, tenant: str) -> None:
        """Nothing to create: the tables come with the migrations, the tenant row with
        the tenant transaction."""

    def provision(self, conn: Connection, tenant: str) -> None:
        """Nothing to create (see ensure)."""

    def forget(self, tenant: str) -> None:
        """Nothing is remembered per tenant."""

    def exists(self, conn: Connection, tenant: str) -> bool:
        row = conn.execute(
            "SELECT EXISTS (SELECT 1 FROM kg_entities WHERE tenant_id = %s)", (tenant,)
        ).fetchone()
        return bool(row and row[0])

    def counts(self, conn: Connection, tenant: str) -> GraphCounts:
        entities = conn.execute(
            "SELECT count(*) FROM kg_entities WHERE tenant_id = %s", (tenant,)
        ).fetchone()
        rows = conn.execute(_statement("counts"), (tenant,)).fetchall()
        return GraphCounts.tally(int(entities[0]) if entities else 0, rows)

    # ------------------------------------------------------------ entities

    def entities(self, conn: Connection, tenant: str, keys: Sequence[str]) -> dict[str, Entity]:
        """In the order asked (a key not found is left out)."""
        if not keys:
            return {}
        wanted = list(dict.fromkeys(keys))
        rows = conn.execute(_statement("entities"), (tenant, wanted)).fetchall()
        found = {row[0]: _entity(row) for row in rows}
        return {key: found[key] for key in wanted if key in found}

    def create_entities(self, conn: Connection, tenant: str, entities: Sequence[Entity]) -> None:
        """A key that exists already is a unique violation, as in the AGE store."""
        if entities:
            conn.execute(_statement("create_entities"), (tenant, *_entity_arrays(entities)))

    def update_entities(self, conn: Connection, tenant: str, entities: Sequence[Entity]) -> None:
        """Every field replaced (an unset one becomes null), as ``SET e = row`` in AGE."""
        if entities:
            conn.execute(_statement("update_entities"), (*_entity_arrays(entities), tenant))

    def delete_entities(self, conn: Connection, tenant: str, keys: Sequence[str]) -> int:
        """The entities and (by cascade) every relation touching them."""
        if not keys:
            return 0
        return conn.execute(
            "DELETE FROM kg_entities WHERE tenant_id = %s AND key = ANY(%s)",
            (tenant, list(dict.fromkeys(keys))),
        ).rowcount

    def candidates(
        self, conn: Connection, tenant: str, text: str, *, domain: str | None, role: str | None
    ) -> list[Entity]:
        """A scan of the tenant's keys (index-only on the primary key): no trigram index is
        needed, and managed services need not offer pg_trgm."""
        rows = conn.execute(
            _statement("find"), {"t": tenant, "q": text, "domain": domain, "role": role}
        ).fetchall()
        return [_entity(row) for row in rows]

    def page(
        self, conn: Connection, tenant: str, offset: int, limit: int
    ) -> tuple[list[Entity], int]:
        total = conn.execute(
            "SELECT count(*) FROM kg_entities WHERE tenant_id = %s", (tenant,)
        ).fetchone()
        rows = conn.execute(_statement("page"), (tenant, offset, limit)).fetchall()
        return [_entity(row) for row in rows], int(total[0]) if total else 0

    def named(self, conn: Connection, tenant: str, keys: Sequence[str], pattern: str) -> set[str]:
        rows = conn.execute(
            "SELECT key FROM kg_entities WHERE tenant_id = %s AND (key = ANY(%s) OR name ~* %s)",
            (tenant, sorted(set(keys)), pattern),
        ).fetchall()
        return {str(row[0]) for row in rows}

    # ------------------------------------------------------------ relations

    def relations(
        self, conn: Connection, tenant: str, keys: Sequence[str], *, active_only: bool
    ) -> list[Relation]:
        """Both directions through the two key indexes (a bitmap OR), in recorded order."""
        if not keys:
            return []
        current = sql.SQL(" AND valid_to IS NULL" if active_only else "")
        rows = conn.execute(
            sql.SQL(_statement("relations")).format(current=current),
            {"t": tenant, "k": list(dict.fromkeys(keys))},
        ).fetchall()
        return [_relation(row) for row in rows]

    def entities_with_relations(
        self, conn: Connection, tenant: str, keys: Sequence[str], *, active_only: bool
    ) -> tuple[dict[str, Entity], list[Relation]]:
        return (
            self.entities(conn, tenant, keys),
            self.relations(conn, tenant, keys, active_only=active_only),
        )

    def create_relations(
        self, conn: Connection, tenant: str, relations: Sequence[Relation]
    ) -> None:
        """A current relation that exists already is skipped (one current row per triple,
        whatever the concurrency); a closed one is always added (history)."""
        if not relations:
            return
        columns: list[list[Any]] = [
            [r.source for r in relations],
            [r.relation_type for r in relations],
            [r.target for r in relations],
        ]
        for name in RELATION_FIELDS:
            values = [r.properties.get(name) for r in relations]
            columns.append([_instant(v) for v in values] if name in _TIMES else values)
        columns.append(
            [
                json.dumps({k: v for k, v in r.properties.items() if k not in RELATION_FIELDS})
                for r in relations
            ]
        )
        conn.execute(_statement("create_relations"), (tenant, *columns))

    def invalidate_relations(
        self, conn: Connection, tenant: str, triples: Sequence[Triple], valid_to: str
    ) -> int:
        if not triples:
            return 0
        return conn.execute(
            _statement("invalidate_relations"),
            (_instant(valid_to), *_triple_arrays(triples), tenant),
        ).rowcount

    def delete_relations(self, conn: Connection, tenant: str, triples: Sequence[Triple]) -> int:
        """Every relation of each triple, current and closed."""
        if not triples:
            return 0
        return conn.execute(
            _statement("delete_relations"), (*_triple_arrays(triples), tenant)
        ).rowcount

    def count_relations(self, conn: Connection, tenant: str, keys: Sequence[str]) -> int:
        row = conn.execute(
            _statement("count_relations"), {"t": tenant, "k": sorted(set(keys))}
        ).fetchone()
        return int(row[0]) if row else 0

    # ------------------------------------------------------------ walks

    def walk(
        self, conn: Connection, tenant: str, keys: Sequence[str], hops: int, limit: int
    ) -> Walk:
        """One recursive CTE finds each reachable entity's distance (at most ``hops``), the
        nearest ``limit`` are kept (seeds first, in the order given); a second statement
        reads the current relations among them that touch an entity short of the last hop."""
        seeds = list(dict.fromkeys(keys))
        if not seeds:
            return Walk(entities={}, relations=[], truncated=False)
        rows = conn.execute(
            _statement("walk"),
            {"keys": seeds, "tenant": tenant, "hops": hops, "cap": WALK_CAP, "limit": limit},
        ).fetchall()
        kept = rows[:limit]
        truncated = len(rows) > limit or bool(rows and rows[0][1])  # or the cap was reached
        entities = {row[2]: _entity(row[2:]) for row in kept}
        inner = [row[2] for row in kept if row[0] < hops]
        relations = []
        if inner:
            found = conn.execute(
                _statement("walk_relations"),
                {"t": tenant, "all": list(entities), "inner": inner},
            ).fetchall()
            relations = [_relation(row) for row in found]
        return Walk(entities=entities, relations=relations, truncated=truncated)
