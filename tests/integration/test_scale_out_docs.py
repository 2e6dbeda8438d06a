"""The Citus kit (deploy/citus) and docs/scale-out.md against the real migrated schema.

No Citus runs here (no container engine): what can be checked without one is checked.
Every table of a freshly migrated database is placed by distribute.sql (distributed,
reference or coordinator-local), the distributed ones have tenant_id, the doc's lists
of unique indexes and foreign keys that change match the schema in both directions,
and prepare.sql, applied to a migrated database on the embedded PostgreSQL, leaves
exactly the constraints Citus accepts. A migration that adds a table or a unique
index without tenant_id fails here until the kit and the doc say what happens to it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
import yaml  # type: ignore[import-untyped]  # pyyaml: a dependency of litestar

from app.db import Database
from app.db.embedded import EmbeddedPostgres

ROOT = Path(__file__).parents[2]
KIT = ROOT / "deploy" / "citus"
DOC = ROOT / "docs" / "scale-out.md"
TENANT = "tenant_id"
PLACEHOLDER = "MEASURED: (filled by the lead)"


@dataclass(frozen=True)
class Placement:
    reference: tuple[str, ...]
    distributed: tuple[tuple[str, str, str | None], ...]  # (table, column, colocate_with)
    local: tuple[str, ...]

    @property
    def distributed_tables(self) -> list[str]:
        return [table for table, _, _ in self.distributed]


def placement() -> Placement:
    """What deploy/citus/distribute.sql does with each table."""
    text = (KIT / "distribute.sql").read_text()
    reference = re.findall(r"create_reference_table\('(\w+)'\)", text)
    distributed = [
        (table, column, colocate or None)
        for table, column, colocate in re.findall(
            r"create_distributed_table\('(\w+)',\s*'(\w+)'(?:,\s*colocate_with\s*=>\s*'(\w+)')?\)",
            text,
        )
    ]
    (local_line,) = re.findall(r"^-- coordinator-local: (.+)$", text, flags=re.MULTILINE)
    local = [name.strip() for name in local_line.split(",")]
    return Placement(tuple(reference), tuple(distributed), tuple(local))


def doc_section_names(heading: str) -> set[str]:
    """The backticked names in the first column of the table under ``heading``."""
    text = DOC.read_text()
    start = text.index(f"### {heading}\n")
    end = text.find("\n### ", start + 1)
    section = text[start : end if end != -1 else None]
    return set(re.findall(r"^\| `(\w+)` \|", section, flags=re.MULTILINE))


@dataclass(frozen=True)
class UniqueIndex:
    table: str
    name: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class ForeignKey:
    name: str
    table: str
    columns: tuple[str, ...]
    target: str
    target_columns: tuple[str, ...]
    on_delete: str  # pg_constraint.confdeltype: a, r, c, n (set null), d (set default)


UNIQUE_INDEXES = """
SELECT c.relname, i.relname,
       ARRAY(SELECT coalesce(a.attname, '(expression)')
               FROM unnest(ix.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
               LEFT JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum = k.attnum
              ORDER BY k.n)::text[]
  FROM pg_index AS ix
  JOIN pg_class AS i ON i.oid = ix.indexrelid
  JOIN pg_class AS c ON c.oid = ix.indrelid
 WHERE c.relnamespace = 'public'::regnamespace AND ix.indisunique
"""

FOREIGN_KEYS = """
SELECT con.conname, src.relname,
       ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY AS k(attnum, n)
               JOIN pg_attribute AS a ON a.attrelid = con.conrelid AND a.attnum = k.attnum
              ORDER BY k.n)::text[],
       dst.relname,
       ARRAY(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY AS k(attnum, n)
               JOIN pg_attribute AS a ON a.attrelid = con.confrelid AND a.attnum = k.attnum
              ORDER BY k.n)::text[],
       con.confdeltype::text
  FROM pg_constraint AS con
  JOIN pg_class AS src ON src.oid = con.conrelid
  JOIN pg_class AS dst ON dst.oid = con.confrelid
 WHERE con.contype = 'f' AND con.connamespace = 'public'::regnamespace
"""


def unique_indexes(conn: psycopg.Connection) -> list[UniqueIndex]:
    rows = conn.execute(UNIQUE_INDEXES).fetchall()
    return [UniqueIndex(table, name, tuple(columns)) for table, name, columns in rows]


def foreign_keys(conn: psycopg.Connection) -> list[ForeignKey]:
    rows = conn.execute(FOREIGN_KEYS).fetchall()
    return [ForeignKey(n, t, tuple(c), tt, tuple(tc), d) for n, t, c, tt, tc, d in rows]


def needs_change(key: ForeignKey, distributed: set[str]) -> bool:
    """A foreign key between distributed tables Citus rejects: tenant_id not paired with
    tenant_id, or SET NULL / SET DEFAULT with tenant_id in it."""
    if key.table not in distributed or key.target not in distributed:
        return False
    pairs = set(zip(key.columns, key.target_columns, strict=True))
    return (TENANT, TENANT) not in pairs or key.on_delete in ("n", "d")


# ---------------------------------------------------------------- files, no database


def test_compose_file_is_a_coordinator_and_two_workers_with_pgvector() -> None:
    compose = yaml.safe_load((KIT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"coordinator", "worker1", "worker2"} <= set(services), services.keys()
    for name in ("coordinator", "worker1", "worker2"):
        assert services[name]["build"]["context"] == ".", name  # the Dockerfile beside it
        assert services[name]["image"] == services["coordinator"]["image"], name
    assert services["coordinator"]["ports"], "the app reaches the coordinator"
    assert "ports" not in services["worker1"] and "ports" not in services["worker2"]
    registration = " ".join(services["register"]["entrypoint"])
    for node in ("worker1", "worker2"):
        assert f"citus_add_node('{node}', 5432)" in registration
    dockerfile = (KIT / "Dockerfile").read_text()
    assert re.search(r"^FROM \$\{CITUS_IMAGE\}$", dockerfile, flags=re.MULTILINE)
    assert "ARG CITUS_IMAGE=citusdata/citus:" in dockerfile
    assert '"postgresql-${PG_MAJOR}-pgvector"' in dockerfile


def test_docs_say_what_was_not_run_and_fill_every_figure() -> None:
    doc, readme = DOC.read_text(), (KIT / "README.md").read_text()
    assert "has not\nbeen run" in doc and "no container engine" in doc
    assert "**Status: not run.**" in readme
    assert PLACEHOLDER not in doc, "a figure is still to be measured"
    assert doc.count("not measured: no container engine here") == 2  # the Citus figures
    assert "\\ir prepare.sql" in (KIT / "distribute.sql").read_text()


def test_distribute_sql_places_tables_in_one_colocation_group() -> None:
    plan = placement()
    assert plan.reference == ("tenants", "analysts", "analyst_grants")
    anchor = plan.distributed_tables[0]
    for table, column, colocate in plan.distributed:
        assert column == TENANT, table
        assert colocate == (None if table == anchor else anchor), table
    every = [*plan.reference, *plan.distributed_tables, *plan.local]
    assert len(every) == len(set(every)), "a table placed twice"


# ---------------------------------------------------------------- the migrated schema


def test_every_table_is_placed_and_distributed_ones_carry_tenant_id(db: Database) -> None:
    plan = placement()
    with db.admin_connection() as conn:
        tables = {
            name
            for (name,) in conn.execute(
                "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace "
                "AND relkind IN ('r', 'p')"
            ).fetchall()
        }
        tenant_column = dict(
            conn.execute(
                "SELECT c.relname, a.attnotnull AND a.atttypid = 'text'::regtype "
                "FROM pg_class AS c JOIN pg_attribute AS a ON a.attrelid = c.oid "
                "WHERE c.relnamespace = 'public'::regnamespace AND a.attname = %s "
                "AND NOT a.attisdropped",
                (TENANT,),
            ).fetchall()
        )
    placed = {*plan.reference, *plan.distributed_tables, *plan.local}
    assert placed - tables == set(), "distribute.sql names tables the migrations do not create"
    assert tables - placed == set(), "tables distribute.sql does not place (distribute them?)"
    for table in plan.distributed_tables:
        # A distribution column holds no NULL: the column must exist and be NOT NULL text.
        assert tenant_column.get(table) is True, f"{table}.tenant_id missing or nullable"


def test_foreign_keys_point_where_citus_allows(db: Database) -> None:
    """Distributed tables reference distributed tables placed before them or the reference
    table; nothing distributed references a coordinator-local table."""
    plan = placement()
    order = {table: n for n, table in enumerate(plan.distributed_tables)}
    with db.admin_connection() as conn:
        keys = foreign_keys(conn)
    for key in keys:
        if key.table in order:
            assert key.target in order or key.target in plan.reference, key
            if key.target in order:
                assert order[key.target] <= order[key.table], f"{key.target} after {key.table}"
        if key.table in plan.reference:
            assert key.target in plan.reference, key


def test_doc_lists_exactly_the_unique_indexes_and_foreign_keys_that_change(
    db: Database,
) -> None:
    distributed = set(placement().distributed_tables)
    with db.admin_connection() as conn:
        indexes, keys = unique_indexes(conn), foreign_keys(conn)
    without_tenant = {i.name for i in indexes if i.table in distributed and TENANT not in i.columns}
    listed = doc_section_names("Unique indexes that change")
    assert without_tenant - listed == set(), "unique indexes Citus rejects, not in the doc"
    assert listed - without_tenant == set(), "stale entries in the doc's unique index list"
    rejected = {key.name for key in keys if needs_change(key, distributed)}
    listed_keys = doc_section_names("Foreign keys that change")
    assert rejected - listed_keys == set(), "foreign keys Citus rejects, not in the doc"
    assert listed_keys - rejected == set(), "stale entries in the doc's foreign key list"


def test_prepare_sql_leaves_only_constraints_citus_accepts(
    pg_server: EmbeddedPostgres, new_database: Callable[..., str]
) -> None:
    distributed = set(placement().distributed_tables)
    name = new_database("scale_out_prepare")
    with psycopg.connect(pg_server.conninfo(dbname=name), autocommit=True) as conn:
        before = {key.name for key in foreign_keys(conn)}
        conn.execute((KIT / "prepare.sql").read_text())
        indexes, keys = unique_indexes(conn), foreign_keys(conn)
        open_transaction = conn.execute("SELECT now() <> statement_timestamp()").fetchone()
    assert open_transaction == (False,), "prepare.sql left a transaction open"
    for index in indexes:
        if index.table in distributed:
            assert TENANT in index.columns, index
    for key in keys:
        assert not needs_change(key, distributed), key
    # What was dropped is exactly the doc's "dropped; the app nulls it" rows.
    dropped = before - {key.name for key in keys}
    doc = DOC.read_text()
    documented = set(re.findall(r"^\| `(\w+)` \| SET NULL \| dropped", doc, flags=re.MULTILINE))
    assert dropped == documented
    assert dropped, "the SET NULL keys should be gone"


@pytest.mark.parametrize("path", ["prepare.sql", "distribute.sql"])
def test_sql_files_name_no_unknown_constraint(db: Database, path: str) -> None:
    """Every constraint or index prepare.sql/distribute.sql drops exists in the schema, so
    the files do not silently drift from the migrations."""
    text = (KIT / path).read_text()
    dropped = set(re.findall(r"DROP CONSTRAINT (?:IF EXISTS )?(\w+)", text))
    dropped |= set(re.findall(r"DROP INDEX (?:IF EXISTS )?(\w+)", text))
    with db.admin_connection() as conn:
        names = {
            row[0]
            for row in conn.execute(
                "SELECT conname FROM pg_constraint WHERE connamespace = 'public'::regnamespace "
                "UNION SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace"
            ).fetchall()
        }
    assert dropped - names == set()
