"""Isolation below the API: what the app role and the worker role can and cannot reach in
the database itself (graphs, the job queue), whatever SQL they send."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from app.config import Settings
from app.db import Database
from app.db.runtime import Connection
from app.errors import Conflict
from app.services.graph import operations
from app.services.graph.age import AGE_SEARCH_PATH, graph_name
from app.services.graph.models import RecordIn
from app.services.jobs import queue
from app.services.runtime import Elephant
from tests.conftest import needs_age

ELEPHANT = str(Path(sys.executable).parent / "elephant")


def record(elephant: Elephant, tenant: str, secret: str) -> None:
    request = RecordIn.model_validate(
        {
            "entities": [
                {"name": f"{tenant} vault", "observations": [secret]},
                {"name": f"{tenant} key"},
            ],
            "relations": [
                {"source": f"{tenant} vault", "relation_type": "uses", "target": f"{tenant} key"}
            ],
        }
    )
    operations.record(elephant, tenant, request)


@pytest.fixture(scope="module")
def graphs(elephant: Elephant) -> dict[str, str]:
    record(elephant, "iso-a", "the vault of A opens with 1111")
    record(elephant, "iso-b", "the vault of B opens with 2222")
    return {"iso-a": graph_name("iso-a"), "iso-b": graph_name("iso-b")}


def graph_tables(db: Database, graph: str) -> list[str]:
    with db.admin_connection() as conn:
        rows = conn.execute(
            "SELECT c.relname FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind = 'r' ORDER BY 1",
            (graph,),
        ).fetchall()
    return [row[0] for row in rows]


def rows_seen(conn: Connection, graph: str, table: str) -> int:
    row = conn.execute(
        sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(graph, table))
    ).fetchone()
    assert row is not None
    return int(row[0])


def cypher(conn: Connection, graph: str, query: str) -> list[Any]:
    assert "$q$" not in query  # the test's own constant text
    statement = sql.SQL(
        "SELECT * FROM ag_catalog.cypher({}, $q${}$q$) AS (r ag_catalog.agtype)"
    ).format(sql.Literal(graph), sql.SQL(query))  # type: ignore[arg-type]
    conn.execute(AGE_SEARCH_PATH)  # as the app's own Cypher calls: nothing from the session
    return conn.execute(statement).fetchall()


@needs_age  # AGE graph schemas; kg_* isolation: tests/integration/test_graph_relational.py
def test_another_tenants_graph_tables_show_no_rows(db: Database, graphs: dict[str, str]) -> None:
    b = graphs["iso-b"]
    tables = graph_tables(db, b)
    assert {"Entity", "uses", "_ag_label_vertex", "_ag_label_edge"} <= set(tables)
    with db.tenant("iso-b") as conn:
        own = {table: rows_seen(conn, b, table) for table in tables}
    assert own["Entity"] == 2 and own["uses"] == 1  # the owner sees its graph
    with db.tenant("iso-a") as conn:
        as_a = {table: rows_seen(conn, b, table) for table in tables}
    with db.connection() as conn:
        as_nobody = {table: rows_seen(conn, b, table) for table in tables}
        conn.rollback()
    assert set(as_a.values()) == {0}, as_a
    assert set(as_nobody.values()) == {0}, as_nobody


@needs_age  # AGE graph schemas; kg_* isolation: tests/integration/test_graph_relational.py
def test_cypher_cannot_read_or_change_another_tenants_graph(
    db: Database, graphs: dict[str, str]
) -> None:
    b = graphs["iso-b"]
    with db.tenant("iso-a") as conn:
        assert cypher(conn, b, "MATCH (e) RETURN properties(e)") == []
        assert cypher(conn, b, "MATCH ()-[r]->() RETURN properties(r)") == []
        assert cypher(conn, b, "MATCH (e:Entity) SET e.name = 'pwned' RETURN e") == []
        assert cypher(conn, b, "MATCH (e:Entity) DETACH DELETE e RETURN 1") == []
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.tenant("iso-a") as conn:
        cypher(conn, b, "CREATE (e:Entity {key: 'smuggled'}) RETURN e")
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.tenant("iso-a") as conn:
        conn.execute(
            sql.SQL('INSERT INTO {} (properties) VALUES (\'{{"key": "x"}}\')').format(
                sql.Identifier(b, "Entity")
            )
        )
    with db.tenant("iso-b") as conn:
        names = sorted(str(row[0]) for row in cypher(conn, b, "MATCH (e:Entity) RETURN e.name"))
    assert names == ['"iso-b key"', '"iso-b vault"']


@needs_age  # AGE graph schemas; kg_* isolation: tests/integration/test_graph_relational.py
def test_analyst_views_and_elephant_sql_see_one_tenant(
    settings: Settings, db: Database, graphs: dict[str, str]
) -> None:
    b = graphs["iso-b"]
    env = {
        **os.environ,
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
    }
    query = (
        "SELECT string_agg(name, ',' ORDER BY name) FROM graph_entities; "
        f'SELECT count(*) FROM "{b}"."Entity"; '
        f'SELECT count(*) FROM "{b}"._ag_label_edge'
    )
    result = subprocess.run(
        [ELEPHANT, "sql", "--tenant", "iso-a", "-c", query, "-At"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["iso-a key,iso-a vault", "0", "0"]


def test_only_the_worker_role_claims_jobs_and_leases_hold(db: Database) -> None:
    with db.tenant("iso-jobs") as conn:
        job_id = queue.enqueue(
            conn, "iso-jobs", "extract_facts", {"secret": "payload"}, max_attempts=3
        )
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.connection() as conn:
        conn.execute("SELECT * FROM elephant_claim_jobs('attacker', 100, 0)")
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.tenant("iso-jobs") as conn:
        conn.execute("SELECT * FROM elephant_claim_jobs('attacker', 100, 600)")
    for lease in (0, -5, 10**6):
        with pytest.raises(psycopg.errors.InvalidParameterValue), db.worker_connection() as conn:
            conn.execute("SELECT * FROM elephant_claim_jobs('thief', 100, %s)", (lease,))
    with db.worker_connection() as conn, conn.transaction():
        claimed = [job for job in queue.claim(conn, 100) if job.id == job_id]
    assert claimed and claimed[0].payload == {"secret": "payload"}
    # a running job is not claimable again while its lease runs, whatever lease is asked
    with db.worker_connection() as conn, conn.transaction():
        again = conn.execute("SELECT id FROM elephant_claim_jobs('thief', 100, 30)").fetchall()
    assert (job_id,) not in again
    with db.admin_connection() as conn:
        conn.execute(
            "UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE id = %s",
            (job_id,),
        )
    with db.worker_connection() as conn, conn.transaction():
        retaken = conn.execute("SELECT id FROM elephant_claim_jobs('next', 100, 60)").fetchall()
    assert (job_id,) in retaken


def test_the_worker_role_reads_no_tenant_data(db: Database) -> None:
    for table in ("memories", "facts", "turns", "jobs", "api_keys", "audit_log"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege), db.worker_connection() as conn:
            conn.execute(sql.SQL("SELECT 1 FROM {} LIMIT 1").format(sql.Identifier(table)))


@needs_age  # AGE graph schemas; kg_* isolation: tests/integration/test_graph_relational.py
def test_deleting_a_tenant_drops_its_graph_for_good(
    elephant: Elephant, db: Database, graphs: dict[str, str]
) -> None:
    record(elephant, "iso-gone", "a secret that must not come back")
    gone = graph_name("iso-gone")
    with db.admin_connection() as conn:
        conn.execute("DELETE FROM tenants WHERE id = 'iso-gone'")
        left = conn.execute("SELECT 1 FROM ag_catalog.ag_graph WHERE name = %s", (gone,)).fetchone()
        schema = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (gone,)).fetchone()
    assert left is None and schema is None
    db.forget_tenant("iso-gone")
    elephant.graph.forget("iso-gone")
    record(elephant, "iso-gone", "a new beginning")
    with db.tenant("iso-gone") as conn:
        texts = [row[0] for row in conn.execute("SELECT text FROM facts").fetchall()]
        entities = cypher(conn, gone, "MATCH (e:Entity) RETURN e.key")
    assert texts == ["a new beginning"] and len(entities) == 2
    with db.tenant("iso-b") as conn:  # nobody else lost anything
        assert len(cypher(conn, graphs["iso-b"], "MATCH (e:Entity) RETURN e.key")) == 2


def test_a_tenant_erased_by_another_process_is_recreated_on_retry(db: Database) -> None:
    def add_note(text: str) -> None:
        with db.tenant("iso-elsewhere") as conn:
            conn.execute(
                "INSERT INTO memories (tenant_id, kind, text, content_hash) "
                "VALUES ('iso-elsewhere', 'note', %s, md5(%s))",
                (text, text),
            )

    add_note("before the erasure")
    with db.admin_connection() as conn:  # another process erases the tenant
        conn.execute("DELETE FROM tenants WHERE id = 'iso-elsewhere'")
    with pytest.raises(Conflict, match="erased while this request ran; retry"):
        add_note("during")
    add_note("after the erasure")
    with db.tenant("iso-elsewhere") as conn:
        texts = [row[0] for row in conn.execute("SELECT text FROM memories").fetchall()]
    assert texts == ["after the erasure"]


def test_a_failed_first_request_does_not_poison_a_new_tenant(db: Database) -> None:
    with pytest.raises(psycopg.errors.DivisionByZero), db.tenant("iso-first") as conn:
        conn.execute("SELECT 1 / 0")
    with db.tenant("iso-first") as conn:
        conn.execute(
            "INSERT INTO memories (tenant_id, kind, text, content_hash) "
            "VALUES ('iso-first', 'note', 'the first note', 'iso-first-h')"
        )
    with db.tenant("iso-first") as conn:
        assert conn.execute("SELECT count(*) FROM tenants").fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (1,)
