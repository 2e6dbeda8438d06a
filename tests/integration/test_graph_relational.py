"""The relational graph backend below the services: its tables, row-level security,
indexes under RLS, and the bounded recursive walk (checked against the hop-by-hop one)."""

from __future__ import annotations

import importlib.util
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from app.config import Settings
from app.db import Database
from app.services.graph import relational
from app.services.graph.relational import RelationalGraphStore
from app.services.graph.store import Entity, Relation
from app.services.graph.vocabulary import RELATIONS
from app.services.graph.walk import walk_by_hops
from tests.conftest import make_settings

ROOT = Path(__file__).resolve().parents[2]
STAMP = "2026-01-01T00:00:00+00:00"


@pytest.fixture(scope="module")
def settings(
    request: pytest.FixtureRequest, pg_data_dir: Path, new_database: Callable[..., str]
) -> Settings:
    name = new_database(request.module.__name__.rsplit(".", 1)[-1])
    return make_settings(pg_data_dir, embedded={"database": name}, graph={"backend": "relational"})


@pytest.fixture(scope="module")
def store() -> RelationalGraphStore:
    return RelationalGraphStore()


def entity(key: str) -> Entity:
    return Entity(key, key.title(), "thing", "general", "unknown", created_at=STAMP)


def relation(source: str, target: str, kind: str = "uses", **props: Any) -> Relation:
    return Relation(source, kind, target, {"valid_from": STAMP, "epistemic": "assertion", **props})


def build(db: Database, store: RelationalGraphStore, tenant: str, edges: list[Relation]) -> None:
    keys = sorted({r.source for r in edges} | {r.target for r in edges})
    with db.tenant(tenant) as conn:
        store.create_entities(conn, tenant, [entity(k) for k in keys])
        store.create_relations(conn, tenant, edges)


# ------------------------------------------------------------------ schema


def test_the_migration_freezes_todays_relation_vocabulary(db: Database) -> None:
    path = ROOT / "migrations" / "versions" / "0008_relational_graph.py"
    spec = importlib.util.spec_from_file_location("migration_0008", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.RELATION_TYPES == RELATIONS, (
        "a relation type was added to the vocabulary: widen the CHECK on "
        "kg_relations.relation_type in a new migration"
    )
    with pytest.raises(psycopg.errors.CheckViolation), db.tenant("vocab") as tx:
        tx.execute(
            "INSERT INTO kg_entities (tenant_id, key, name, role, domain, epistemic) "
            "VALUES ('vocab', 'a', 'A', 'thing', 'general', 'unknown'), "
            "       ('vocab', 'b', 'B', 'thing', 'general', 'unknown')"
        )
        tx.execute(
            "INSERT INTO kg_relations (tenant_id, source_key, relation_type, target_key) "
            "VALUES ('vocab', 'a', 'adores', 'b')"
        )


def test_every_column_an_analyst_reads_is_documented(db: Database) -> None:
    with db.admin_connection() as admin:
        rows = admin.execute(
            "SELECT c.relname, a.attname, col_description(c.oid, a.attnum), "
            "obj_description(c.oid, 'pg_class') FROM pg_class AS c "
            "JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0 "
            "AND NOT a.attisdropped WHERE c.relname IN ('kg_entities', 'kg_relations')"
        ).fetchall()
    assert len(rows) == 11 + 11
    assert [(t, c) for t, c, comment, _ in rows if not comment] == []
    assert all(table_comment for *_, table_comment in rows)


def test_one_entity_per_key_and_one_current_relation_per_triple(
    db: Database, store: RelationalGraphStore
) -> None:
    tenant = "dupes"
    build(db, store, tenant, [relation("a", "b")])
    with pytest.raises(psycopg.errors.UniqueViolation), db.tenant(tenant) as tx:
        store.create_entities(tx, tenant, [entity("a")])
    with db.tenant(tenant) as tx:
        store.create_relations(tx, tenant, [relation("a", "b"), relation("a", "b")])
        assert len(store.relations(tx, tenant, ["a"], active_only=False)) == 1
        closed = relation("a", "b", valid_to="2026-02-01T00:00:00+00:00")
        store.create_relations(tx, tenant, [closed, closed])  # history is always added
        assert store.invalidate_relations(tx, tenant, [("a", "uses", "b")] * 2, STAMP) == 1
        store.create_relations(tx, tenant, [relation("a", "b")])
        every = store.relations(tx, tenant, ["b"], active_only=False)
        current = store.relations(tx, tenant, ["b"], active_only=True)
    assert len(every) == 4 and len(current) == 1
    assert current[0].properties == {
        "valid_from": STAMP,
        "epistemic": "assertion",
    }


# ------------------------------------------------------------------ row-level security


def test_the_app_role_reaches_only_its_tenants_rows(
    db: Database, store: RelationalGraphStore
) -> None:
    build(db, store, "rls-a", [relation("alice", "secret project")])
    build(db, store, "rls-b", [relation("bob", "public project")])
    with db.tenant("rls-b") as tx:
        entities = tx.execute("SELECT tenant_id, key FROM kg_entities ORDER BY key").fetchall()
        relations = tx.execute("SELECT tenant_id, source_key FROM kg_relations").fetchall()
        # the store names the tenant explicitly: another tenant's name finds nothing
        assert store.entities(tx, "rls-a", ["alice"]) == {}
        assert store.relations(tx, "rls-a", ["alice"], active_only=False) == []
        assert store.counts(tx, "rls-a").entities == 0
        changed = tx.execute("UPDATE kg_entities SET name = 'pwned' WHERE key = 'alice'").rowcount
        removed = tx.execute("DELETE FROM kg_relations WHERE tenant_id = 'rls-a'").rowcount
    assert entities == [("rls-b", "bob"), ("rls-b", "public project")]
    assert relations == [("rls-b", "bob")]
    assert (changed, removed) == (0, 0)
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"),
        db.tenant("rls-b") as tx,
    ):
        tx.execute(
            "INSERT INTO kg_entities (tenant_id, key, name, role, domain, epistemic) "
            "VALUES ('rls-a', 'mole', 'Mole', 'person', 'general', 'unknown')"
        )
    with db.connection() as bare:  # the app role with no tenant set sees nothing
        assert bare.execute("SELECT count(*) FROM kg_entities").fetchone() == (0,)
        assert bare.execute("SELECT count(*) FROM kg_relations").fetchone() == (0,)
        flags = bare.execute(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, "
            "pg_get_userbyid(c.relowner) = current_user FROM pg_class AS c "
            "WHERE c.relname IN ('kg_entities', 'kg_relations') ORDER BY 1"
        ).fetchall()
        bare.rollback()
    assert flags == [("kg_entities", True, True, False), ("kg_relations", True, True, False)]
    with db.tenant("rls-a") as tx:
        assert store.entities(tx, "rls-a", ["alice"])["alice"].name == "Alice"
        assert store.counts(tx, "rls-a").entities == 2


def test_deleting_a_tenant_deletes_its_graph(db: Database, store: RelationalGraphStore) -> None:
    build(db, store, "gone", [relation("x", "y"), relation("y", "z")])
    build(db, store, "stays", [relation("x", "y")])
    with db.admin_connection() as admin:
        admin.execute("DELETE FROM tenants WHERE id = 'gone'")
        left = admin.execute(
            "SELECT (SELECT count(*) FROM kg_entities WHERE tenant_id = %(t)s), "
            "(SELECT count(*) FROM kg_relations WHERE tenant_id = %(t)s), "
            "(SELECT count(*) FROM kg_relations WHERE tenant_id = 'stays')",
            {"t": "gone"},
        ).fetchone()
    db.forget_tenant("gone")
    assert left == (0, 0, 1)


def test_lookups_use_their_index_under_row_level_security(
    db: Database, store: RelationalGraphStore
) -> None:
    """Equality on text is leakproof: the planner may use the key indexes below the policy.
    (Seq scans are switched off so the plan shows whether the index is usable at all.)"""
    build(db, store, "plans", [relation(f"n{i}", f"n{i + 1}") for i in range(2000)])
    with db.admin_connection() as admin:
        admin.execute("ANALYZE kg_entities, kg_relations")
    with db.tenant("plans") as tx:
        tx.execute("SET LOCAL enable_seqscan = off")

        def plan(statement: str, params: dict[str, Any]) -> str:
            rows = tx.execute(f"EXPLAIN {statement}", params).fetchall()
            return "\n".join(str(row[0]) for row in rows)

        params = {"t": "plans", "k": ["n7"]}
        walk = plan(
            "SELECT source_key FROM kg_relations WHERE tenant_id = %(t)s "
            "AND (source_key = ANY(%(k)s) OR target_key = ANY(%(k)s))",
            params,
        )
        keys = plan(
            "SELECT name FROM kg_entities WHERE tenant_id = %(t)s AND key = ANY(%(k)s)", params
        )
    assert "kg_relations_source" in walk and "kg_relations_target" in walk, walk
    assert "kg_entities_pkey" in keys, keys


# ------------------------------------------------------------------ walks


def test_walk_is_bounded_by_hops_limit_and_current_relations(
    db: Database, store: RelationalGraphStore
) -> None:
    tenant = "walks"
    chain = [relation(f"c{i}", f"c{i + 1}") for i in range(6)]
    hub = [relation("hub", f"spoke {i:02d}", "knows") for i in range(30)]
    closed = [relation("c0", "shortcut", valid_to=STAMP), relation("shortcut", "c5")]
    build(db, store, tenant, chain + hub + closed)
    with db.tenant(tenant) as tx:
        for hops in (1, 2, 3):
            walk = store.walk(tx, tenant, ["c0"], hops, 50)
            assert list(walk.entities) == [f"c{i}" for i in range(hops + 1)]
            assert [r.triple for r in walk.relations] == [r.triple for r in chain[:hops]]
            assert walk.truncated is False
        backwards = store.walk(tx, tenant, ["c6"], 2, 50)
        assert list(backwards.entities) == ["c6", "c5", "c4", "shortcut"]
        # seeds first, in the order given; then the nearest, up to the limit
        cut = store.walk(tx, tenant, ["hub", "c3"], 3, 10)
        assert list(cut.entities)[:2] == ["hub", "c3"] and len(cut.entities) == 10
        assert cut.truncated is True
        assert {r.source for r in cut.relations} <= set(cut.entities)
        assert {r.target for r in cut.relations} <= set(cut.entities)
        assert store.walk(tx, tenant, [], 3, 10).entities == {}
        assert store.walk(tx, tenant, ["nobody"], 3, 10).entities == {}


def test_walk_stops_at_its_row_cap(
    db: Database, store: RelationalGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = "walk-cap"
    build(db, store, tenant, [relation("root", f"leaf {i:02d}") for i in range(40)])
    monkeypatch.setattr(relational, "WALK_CAP", 10)
    with db.tenant(tenant) as tx:
        walk = store.walk(tx, tenant, ["root"], 1, 200)
    assert walk.truncated is True and len(walk.entities) < 40


def _random_graph(rng: random.Random, size: int, count: int) -> list[Relation]:
    edges: dict[tuple[str, str, str], Relation] = {}
    kinds = ("uses", "knows", "part_of")
    while len(edges) < count:
        s, t = rng.sample(range(size), 2)
        kind = rng.choice(kinds)
        props = {"valid_to": STAMP} if rng.random() < 0.15 else {}
        edges.setdefault(
            (f"e{s:02d}", kind, f"e{t:02d}"), relation(f"e{s:02d}", f"e{t:02d}", kind, **props)
        )
    return list(edges.values())


def test_the_recursive_walk_agrees_with_the_hop_by_hop_walk(
    db: Database, store: RelationalGraphStore
) -> None:
    tenant = "walk-agree"
    rng = random.Random(11)
    edges = _random_graph(rng, 60, 110)
    build(db, store, tenant, edges)
    keys = sorted({r.source for r in edges} | {r.target for r in edges})
    checked = 0
    with db.tenant(tenant) as tx:
        for _ in range(25):
            seeds = rng.sample(keys, rng.choice((1, 1, 2)))
            hops, limit = rng.choice((1, 2, 3)), rng.choice((5, 15, 200))
            fast = store.walk(tx, tenant, seeds, hops, limit)
            slow = walk_by_hops(store, tx, tenant, seeds, hops, limit)
            assert fast.truncated == slow.truncated, (seeds, hops, limit)
            assert len(fast.entities) == len(slow.entities), (seeds, hops, limit)
            assert list(fast.entities)[: len(seeds)] == seeds
            if not slow.truncated:  # the same entities and relations (order may differ)
                assert set(fast.entities) == set(slow.entities), (seeds, hops, limit)
                assert sorted(r.triple for r in fast.relations) == sorted(
                    r.triple for r in slow.relations
                ), (seeds, hops, limit)
                checked += 1
            kept = set(fast.entities)
            assert all(r.source in kept and r.target in kept for r in fast.relations)
            assert all(r.active for r in fast.relations)
    assert checked >= 10
