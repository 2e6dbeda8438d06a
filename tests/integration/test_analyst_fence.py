"""An analyst's queries never touch another tenant's rows (issue 40, item 1).

The attack: as an analyst of A, ``EXPLAIN ANALYZE SELECT 1 FROM facts WHERE tenant_id = 'b'
AND subject >= 'G' AND subject < 'H'`` showed ``Rows Removed by Filter: 1`` when B had a
subject in that range (the index condition ran before the row-level policy), and a prefix
walk read B's values. Here the walk runs as an analyst of A against B's fact subjects,
conversation ids and memory counts, with EXPLAIN and EXPLAIN ANALYZE under planner
settings, and must learn nothing: every probe's plan, once its own constants are masked,
is the same as the plan of a range that holds no row at all.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from app.db import Database
from app.db.embedded import EmbeddedPostgres
from app.providers.embedder import Embedder
from app.services.access import analysts
from app.services.access.analysts import AnalystIn
from app.services.memory.commit import commit_note
from app.services.memory.schemas import NoteIn
from app.services.runtime import Elephant
from tests.conftest import MANAGED, api_client, make_settings, needs_age

A, B, C = "fence-a", "fence-b", "fence-c"
SUBJECT_B, EXTERNAL_B = "mira", "kestrel"  # what the walk tries to read
SUBJECT_A = "zeta"  # A's own values start with z: outside the walk's alphabet
ALPHABET = string.ascii_lowercase[:-1]  # a..y: each letter's successor is a letter too
EMPTY = ("0000", "0001")  # a range that holds no row of anyone
PLANNER = (
    (),
    ("enable_seqscan",),
    ("enable_seqscan", "enable_bitmapscan"),
    ("enable_seqscan", "enable_indexscan"),
    ("enable_bitmapscan", "enable_indexscan"),
    ("enable_seqscan", "enable_bitmapscan", "enable_indexonlyscan"),
)
EXPLAINS = (
    "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)",
    "EXPLAIN (ANALYZE, TIMING OFF, SUMMARY OFF, BUFFERS OFF)",
    "EXPLAIN",
)


def post(client: object, path: str, body: dict[str, object], tenant: str) -> None:
    response = client.post(path, json=body, headers={"X-Elephant-Tenant": tenant})  # type: ignore[attr-defined]
    assert response.status_code in (200, 201, 202), response.text


@pytest.fixture(scope="module")
def seeded(elephant: Elephant) -> Elephant:
    with api_client(elephant.settings, elephant) as client:
        for tenant, conversation in ((A, "zed-talk"), (B, EXTERNAL_B), (C, "zc-talk")):
            post(client, "/commit", {"text": f"A note of {tenant}."}, tenant)
            turns = [{"speaker": "Maya", "text": f"Hello from {tenant}."}]
            body = {"conversation_id": conversation, "turns": turns}
            post(client, "/commit_conversation", body, tenant)
        for tenant in (A, B):
            entities = {"entities": [{"name": f"Entity of {tenant}", "entity_type": "person"}]}
            post(client, "/graph/entities", entities, tenant)
    with elephant.db.admin_connection() as conn:
        for tenant, subject in ((A, SUBJECT_A), (B, SUBJECT_B)):
            conn.execute(
                "INSERT INTO facts (tenant_id, subject, text) VALUES (%s, %s, %s)",
                (tenant, subject, f"{subject} is a name"),
            )
        conn.commit()
    return elephant


@pytest.fixture(scope="module")
def analyst_of_a(seeded: Elephant) -> Iterator[analysts.CreatedAnalyst]:
    created = analysts.create(seeded.db, AnalystIn(name="fence_one", tenants=[A]))
    yield created
    analysts.revoke(seeded.db, "fence_one")


def connect_as(db: Database, role: str) -> psycopg.Connection:
    return psycopg.connect(analysts.login_conninfo(db, role), autocommit=True)


Oracle = Callable[[str, str], bool]


def oracle(conn: psycopg.Connection, explain: str, template: str) -> Oracle:
    """Whether the plan of ``template`` over [lo, hi) differs from the plan over a range
    that holds nothing, once the probe's own constants are masked: what an attacker reads."""

    def plan(lo: str, hi: str) -> str:
        query = sql.SQL(template).format(lo=sql.Literal(lo), hi=sql.Literal(hi))
        text = "\n".join(
            str(row[0]) for row in conn.execute(sql.SQL(explain + " ") + query).fetchall()
        )
        return text.replace(repr(lo), "'LO'").replace(repr(hi), "'HI'")

    baseline = plan(*EMPTY)
    return lambda lo, hi: plan(lo, hi) != baseline


def walk(differs: Oracle) -> str:
    """The prefix walk: extend the known prefix by the letter whose range shows a row."""
    prefix = ""
    while len(prefix) < 10:
        for letter in ALPHABET:
            if differs(prefix + letter, prefix + chr(ord(letter) + 1)):
                prefix += letter
                break
        else:
            return prefix
    return prefix


def set_planner(conn: psycopg.Connection, off: tuple[str, ...]) -> None:
    conn.execute("RESET ALL")
    for setting in off:
        conn.execute(sql.SQL("SET {} = off").format(sql.Identifier(setting)))


WALKS = (
    "SELECT 1 FROM facts WHERE tenant_id = 'fence-b' AND subject >= {lo} AND subject < {hi}",
    "SELECT 1 FROM facts WHERE subject >= {lo} AND subject < {hi}",
    "SELECT 1 FROM conversations WHERE tenant_id = 'fence-b' "
    "AND external_id >= {lo} AND external_id < {hi}",
    "SELECT count(*) FROM public.facts WHERE subject >= {lo} AND subject < {hi}",
)


def test_the_prefix_walk_over_explain_reads_nothing_of_b(
    seeded: Elephant, analyst_of_a: analysts.CreatedAnalyst
) -> None:
    with connect_as(seeded.db, analyst_of_a.role) as conn:
        for off in PLANNER:
            set_planner(conn, off)
            for explain in EXPLAINS:
                for template in WALKS:
                    try:
                        found = walk(oracle(conn, explain, template))
                    except psycopg.errors.InsufficientPrivilege:
                        continue  # public.facts: not readable at all
                    assert found == "", (off, explain, template, found)


def test_explain_counts_no_memory_of_b_by_creation_time(
    seeded: Elephant, analyst_of_a: analysts.CreatedAnalyst
) -> None:
    now = datetime.now(UTC)
    window = ((now - timedelta(hours=2)).isoformat(), (now + timedelta(hours=2)).isoformat())
    query = (
        "SELECT 1 FROM memories WHERE tenant_id = 'fence-b' "
        "AND created_at >= {lo}::timestamptz AND created_at < {hi}::timestamptz"
    )
    with connect_as(seeded.db, analyst_of_a.role) as conn:
        for off in PLANNER:
            set_planner(conn, off)
            for explain in EXPLAINS:
                for template in (query, query + " ORDER BY created_at DESC"):
                    differs = oracle_at(conn, explain, template)
                    assert not differs(*window), (off, explain, template)


def oracle_at(conn: psycopg.Connection, explain: str, template: str) -> Oracle:
    """oracle() with an empty range of timestamps (the year 2000) as its baseline."""

    def plan(lo: str, hi: str) -> str:
        query = sql.SQL(template).format(lo=sql.Literal(lo), hi=sql.Literal(hi))
        text = "\n".join(str(r[0]) for r in conn.execute(sql.SQL(explain + " ") + query))
        return re.sub(r"'[0-9]{4}-[0-9]{2}-[0-9]{2}[^']*'", "'T'", text)

    baseline = plan("2000-01-01T00:00:00+00:00", "2000-01-02T00:00:00+00:00")
    return lambda lo, hi: plan(lo, hi) != baseline


def test_the_planner_estimates_read_no_statistics_of_b(
    seeded: Elephant, analyst_of_a: analysts.CreatedAnalyst
) -> None:
    """Whole-table statistics (pg_statistic, from ANALYZE) must not shape the analyst's
    estimates: the histogram's bounds are other tenants' values."""
    with seeded.db.admin_connection() as conn:
        for i in range(300):
            conn.execute(
                "INSERT INTO facts (tenant_id, subject, text) VALUES (%s, %s, 'x')",
                (B, f"{SUBJECT_B}{i:03d}"),
            )
        conn.commit()
        conn.execute("ANALYZE facts")
    template = "SELECT 1 FROM facts WHERE subject >= {lo} AND subject < {hi}"
    with connect_as(seeded.db, analyst_of_a.role) as conn:
        differs = oracle(conn, "EXPLAIN", template)
        assert not differs("mi", "mj")
        assert walk(differs) == ""


def test_an_analyst_reads_only_its_fence(
    seeded: Elephant, analyst_of_a: analysts.CreatedAnalyst
) -> None:
    with connect_as(seeded.db, analyst_of_a.role) as conn:
        conn.execute("SET elephant.tenant_id = 'fence-b'")
        subjects = {r[0] for r in conn.execute("SELECT subject FROM facts")}
        assert SUBJECT_A in subjects and not any(s.startswith(SUBJECT_B) for s in subjects)
        external = {r[0] for r in conn.execute("SELECT external_id FROM conversations")}
        assert external == {"zed-talk"}
        tenants = {r[0] for r in conn.execute("SELECT tenant_id FROM memories")}
        assert tenants == {A}
        names = {r[0] for r in conn.execute("SELECT name FROM graph_entities")}
        assert f"Entity of {A}" in names and f"Entity of {B}" not in names
        current = {r[0] for r in conn.execute("SELECT subject FROM current_facts")}
        assert SUBJECT_A in current and SUBJECT_B not in current
        grants = conn.execute("SELECT tenant_id FROM analyst_grants").fetchall()
        assert grants == [(A,)]
        for table in ("facts", "memories", "analyst_grants", "graph_entities", "tenants"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql.SQL("SELECT 1 FROM {}").format(sql.Identifier("public", table)))


@needs_age
def test_b_graph_cannot_be_named_read_or_locked_and_a_cypher_works(
    seeded: Elephant, analyst_of_a: analysts.CreatedAnalyst
) -> None:
    db = seeded.db
    with db.admin_connection() as conn:
        graph_a, graph_b = (
            conn.execute("SELECT elephant_graph_name(%s)", (t,)).fetchone()[0]  # type: ignore[index]
            for t in (A, B)
        )
    with connect_as(db, analyst_of_a.role) as conn:
        conn.execute("SELECT 'null'::ag_catalog.agtype")  # loads AGE (LOAD is not allowed)
        rows = conn.execute(
            sql.SQL(
                "SELECT * FROM ag_catalog.cypher({}, $q$ MATCH (n:Entity) RETURN n.name $q$) "
                "AS (name ag_catalog.agtype)"
            ).format(sql.Literal(graph_a))
        ).fetchall()
        assert [str(r[0]).strip('"') for r in rows] == [f"Entity of {A}"]
        for statement in (
            sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(graph_b, "Entity")),
            sql.SQL("LOCK TABLE {} IN ACCESS SHARE MODE").format(sql.Identifier(graph_b, "Entity")),
            sql.SQL(
                "SELECT * FROM ag_catalog.cypher({}, $q$ MATCH (n) RETURN n $q$) "
                "AS (n ag_catalog.agtype)"
            ).format(sql.Literal(graph_b)),
        ):
            with conn.transaction(), pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
        conn.execute("BEGIN")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(sql.SQL("SELECT 1 FROM {}").format(sql.Identifier(graph_b, "Entity")))
        with db.admin_connection() as admin, admin.transaction(force_rollback=True):
            admin.execute("SET LOCAL lock_timeout = '2s'")
            admin.execute(
                sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(
                    sql.Identifier(graph_b, "Entity")
                )
            )
        conn.execute("ROLLBACK")


def test_a_graph_provisioned_later_and_an_erased_tenant(seeded: Elephant) -> None:
    """C's graph comes after its analyst: the analyst reads it. C erased and written
    again under the same id: the analyst (its grant gone with the tenant) sees none of it."""
    db = seeded.db
    created = analysts.create(db, AnalystIn(name="fence_later", tenants=[C]))
    try:
        with api_client(seeded.settings, seeded) as client:
            entities = {"entities": [{"name": "Entity of C", "entity_type": "person"}]}
            post(client, "/graph/entities", entities, C)
        with connect_as(db, created.role) as conn:
            names = {r[0] for r in conn.execute("SELECT name FROM graph_entities")}
            assert names == {"Entity of C"}
            assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] > 0  # type: ignore[index]
        with api_client(seeded.settings, seeded) as client:
            post(client, "/erase", {"tenant": True}, C)
            post(client, "/commit", {"text": "A new C under the old id."}, C)
            post(client, "/graph/entities", entities, C)
        with connect_as(db, created.role) as conn:
            for table in ("memories", "tenants", "graph_entities", "conversations"):
                query = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
                assert conn.execute(query).fetchone() == (0,), table
    finally:
        analysts.revoke(db, "fence_later")


def test_every_tenant_table_has_a_view_in_the_fence(
    seeded: Elephant, analyst_of_a: analysts.CreatedAnalyst
) -> None:
    """A table added later with tenant_isolation must reach the analysts' schemas too."""
    with seeded.db.admin_connection() as conn:
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT tablename::text FROM pg_policies WHERE schemaname = 'public' "
                "AND policyname = 'tenant_isolation'"
            )
        }
        views = {
            r[0]
            for r in conn.execute(
                "SELECT viewname::text FROM pg_views WHERE schemaname = 'analyst_fence_one'"
            )
        }
    assert tables and tables <= views, tables - views


def test_revoke_drops_the_fence(seeded: Elephant) -> None:
    db = seeded.db
    created = analysts.create(db, AnalystIn(name="fence_gone", tenants=[A, B]))
    analysts.revoke(db, "fence_gone")
    with db.admin_connection() as conn:
        assert conn.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname = 'analyst_fence_gone'"
        ).fetchone() == (0,)
        assert conn.execute(
            "SELECT count(*) FROM pg_roles WHERE rolname = %s", (created.role,)
        ).fetchone() == (0,)


def test_the_fence_covers_the_relational_graph(
    seeded: Elephant, analyst_of_a: analysts.CreatedAnalyst
) -> None:
    if not MANAGED and seeded.settings.graph.backend != "relational":
        pytest.skip("the AGE backend: the relational tables are checked in managed mode")
    with connect_as(seeded.db, analyst_of_a.role) as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM graph_entities")}
    assert f"Entity of {A}" in names and f"Entity of {B}" not in names


def test_the_migration_fences_analysts_that_already_exist(seeded: Elephant) -> None:
    """Below 0017 an analyst reads the public tables (row-level security); the upgrade
    builds its schema and takes those privileges away, the downgrade gives them back."""
    db = seeded.db
    created = analysts.create(db, AnalystIn(name="fence_old", tenants=[A]))
    try:
        db.downgrade("0016_store_items")
        with connect_as(db, created.role) as conn:
            assert conn.execute("SHOW search_path").fetchone() == ("public",)
            assert conn.execute("SELECT count(*) FROM public.memories").fetchone() != (0,)
        db.migrate()
        with connect_as(db, created.role) as conn:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("SELECT count(*) FROM public.memories")
            tenants = {r[0] for r in conn.execute("SELECT tenant_id FROM memories")}
            assert tenants == {A}
            if not MANAGED:
                names = {r[0] for r in conn.execute("SELECT name FROM graph_entities")}
                assert names == {f"Entity of {A}"}
    finally:
        analysts.revoke(db, "fence_old")


def test_a_migrator_that_is_no_superuser_fences_too(
    pg_server: EmbeddedPostgres,
    tmp_path: Path,
    new_database: Callable[..., str],
    embedder: Embedder,
) -> None:
    """On a team's own Postgres the migrator owns the FORCE ROW LEVEL SECURITY tables
    without bypassing them: the views read through the analyst_fence policy, and the
    walk still finds nothing."""
    name = new_database("fence_owner", empty=True)
    with psycopg.connect(pg_server.conninfo(), autocommit=True) as conn:
        conn.execute("CREATE ROLE fence_owner LOGIN CREATEROLE")
        conn.execute(sql.SQL("ALTER DATABASE {} OWNER TO fence_owner").format(sql.Identifier(name)))
    with psycopg.connect(pg_server.conninfo(dbname=name), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
    url = f"postgresql://fence_owner@/{name}?host={pg_server.socket_dir}&port={pg_server.port}"
    database = {"url": url, "app_role": "fo_app", "worker_role": "fo_worker"}
    settings = make_settings(tmp_path, database={**database, "optional_extensions": ()})
    with Database(settings) as db:
        elephant = Elephant(settings=settings, db=db, embedder=embedder, llm=None)
        for tenant in (A, B):
            text = f"Marta booked the greenhouse roof in Lisbon for {tenant} on 3 May 2024."
            commit_note(elephant, tenant, NoteIn(text=text, source="chat"), wait=True)
        with db.admin_connection() as conn:
            conn.execute("SELECT set_config('elephant.tenant_id', %s, false)", (B,))
            conn.execute(
                "INSERT INTO facts (tenant_id, subject, text) VALUES (%s, 'mira', 'm')", (B,)
            )
            conn.commit()
        created = analysts.create(db, AnalystIn(name="fence_owned", tenants=[A]))
        try:
            with connect_as(db, created.role) as conn:
                assert {r[0] for r in conn.execute("SELECT tenant_id FROM memories")} == {A}
                conn.execute("SET elephant.tenant_id = 'fence-b'")
                assert {r[0] for r in conn.execute("SELECT tenant_id FROM memories")} == {A}
                set_planner(conn, ("enable_seqscan", "enable_bitmapscan"))
                for explain in EXPLAINS:
                    assert walk(oracle(conn, explain, WALKS[0])) == ""
        finally:
            analysts.revoke(db, "fence_owned")
