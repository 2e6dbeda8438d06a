"""Which tables hold a tenant, in which order, and their columns: read from the catalog.

Export and import dump rows generically (``to_jsonb`` of each row, columns as the
database has them today), so a column another change adds is carried without a code
change here. The order is explicit: erasure's table list (children before parents),
reversed, so a row is written after the rows it references; a tenant table that list
does not know yet goes after them, parents before children by its foreign keys.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.db.resources import load_sql
from app.db.runtime import Connection
from app.errors import ElephantError
from app.services.access import erasure

# Parents first: every foreign key points at a table earlier in this list.
ORDER: tuple[str, ...] = tuple(reversed(erasure.TABLES))
# Tenant tables that say how this server serves and maintains the tenant, not what the
# tenant holds: its vector way (recorded by the keeper, app/db/tenant_indexes.py; an
# import records it afresh) and the maintenance runs (the scheduler's bookkeeping; a
# run's job_id names a job of this server's queue). Never exported; an import skips
# their rows in files of the releases that exported them (docs/export.md).
SERVING: frozenset[str] = frozenset({"tenant_vector_ways", "maintenance_runs"})
# Tenant tables never exported: the audit log, API keys and analyst grants belong to the
# deployment (who may reach the data, not the data), the
# AGE graph registry is made by provisioning, the serving state above, and the graph
# travels through its backend (so an export from AGE imports into the relational tables
# and the other way round).
SKIPPED: frozenset[str] = frozenset(
    {
        *SERVING,
        *erasure.KEPT_TABLES,
        "api_keys",
        "analyst_grants",
        "graphs",
        *erasure.RELATIONAL_GRAPH_TABLES,
    }
)
VECTOR_TYPES = frozenset({"vector", "halfvec", "sparsevec"})

_TABLES = load_sql("transfer/catalog_tables.sql")
_COLUMNS = load_sql("transfer/catalog_columns.sql")
# Primary keys, single-column foreign keys, and unique constraints (natural keys).
_CONSTRAINTS = load_sql("transfer/catalog_constraints.sql")


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str  # the type's name: uuid, int8, vector, jsonb, ...
    not_null: bool
    generated: bool  # computed by the database (tsv, subject_key): never written
    identity: bool  # numbered by a database-wide sequence: never kept, renumbered

    @property
    def vector(self) -> bool:
        return self.type in VECTOR_TYPES


@dataclass(frozen=True, slots=True)
class Reference:
    """A single-column foreign key: ``column`` points at ``table.target``."""

    column: str
    table: str
    target: str


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    references: tuple[Reference, ...]
    unique: tuple[tuple[str, ...], ...]  # unique constraints other than the primary key

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.name == name), None)

    @property
    def stored(self) -> tuple[Column, ...]:
        """The columns a row is exported with (generated ones are left out)."""
        return tuple(c for c in self.columns if not c.generated and c.name != "tenant_id")

    @property
    def identity(self) -> Column | None:
        return next((c for c in self.columns if c.identity), None)

    @property
    def uuid_key(self) -> str | None:
        """The primary key when it is one uuid column (ids a caller knows: kept, or with
        --new-ids replaced)."""
        if len(self.primary_key) == 1:
            column = self.column(self.primary_key[0])
            if column is not None and column.type == "uuid":
                return column.name
        return None

    @property
    def needs_vectors(self) -> bool:
        """A NOT NULL vector column: without vectors the rows cannot be written as they are
        (passages): the import rebuilds them instead."""
        return any(c.vector and c.not_null for c in self.columns)


@dataclass(frozen=True, slots=True)
class Catalog:
    tables: dict[str, Table]  # in export order

    @property
    def order(self) -> list[str]:
        return list(self.tables)


def read(conn: Connection) -> Catalog:
    """Every tenant table that export carries, in dependency order, with its columns."""
    found = [str(row[0]) for row in conn.execute(_TABLES).fetchall()]
    names = [name for name in found if name not in SKIPPED]
    columns: dict[str, list[Column]] = {name: [] for name in names}
    for table, name, type_name, not_null, generated, identity in conn.execute(
        _COLUMNS, (names,)
    ).fetchall():
        columns[table].append(Column(name, type_name, not_null, generated, identity))
    keys: dict[str, tuple[str, ...]] = {}
    references: dict[str, list[Reference]] = {name: [] for name in names}
    unique: dict[str, list[tuple[str, ...]]] = {name: [] for name in names}
    for table, kind, other, own, theirs in conn.execute(_CONSTRAINTS, (names,)).fetchall():
        if kind == "p":
            keys[table] = tuple(own)
        elif kind == "u":
            unique[table].append(tuple(own))
        elif len(own) == 1 and other != "tenants":
            references[table].append(Reference(own[0], str(other), theirs[0]))
    tables = {
        name: Table(
            name,
            tuple(columns[name]),
            keys.get(name, ()),
            tuple(references[name]),
            tuple(unique[name]),
        )
        for name in names
    }
    return Catalog({name: tables[name] for name in _ordered(tables)})


def _ordered(tables: dict[str, Table]) -> list[str]:
    """The known order, then any newer tenant table once the tables it references are
    placed (a cycle between new tables is an error to fix here, not to guess)."""
    placed = [name for name in ORDER if name in tables]
    rest = sorted(name for name in tables if name not in placed)
    while rest:
        ready = [
            name
            for name in rest
            if all(
                ref.table in placed or ref.table == name or ref.table not in tables
                for ref in tables[name].references
            )
        ]
        if not ready:
            raise ElephantError(
                f"tables {', '.join(rest)} reference each other: export cannot order them; "
                "add them to erasure.TABLES"
            )
        placed += ready
        rest = [name for name in rest if name not in ready]
    return placed
