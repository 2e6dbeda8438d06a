"""Whole-database backup and restore (issue 39): ``elephant backup`` of a populated
database on the run's server, ``elephant restore`` into a SECOND embedded server on a
fresh data dir, then the restored database is compared with its source: every table's
row count (the AGE catalog and graph schemas included), 60 of 60 search lists, the
access-control matrix (API keys, an analyst's login, row-level security), the graph
through cypher() and the BM25 probe. Refusals write nothing."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from litestar.testing import TestClient
from psycopg import sql

from app.cli import main
from app.config import Settings
from app.db import Database, tenant_indexes
from app.db.embedded import EmbeddedPostgres, binaries_dir
from app.db.resources import load_sql
from app.errors import Conflict, Forbidden, InvalidInput
from app.providers.embedder import Embedder
from app.services.access import analysts
from app.services.access.analysts import AnalystIn
from app.services.access.keys import KeyIn, create_key
from app.services.ops.backup.make import BackupReport, backup, count_rows
from app.services.ops.backup.restore import RestoreReport, restore
from app.services.ops.backup.tools import ToolFailed
from app.services.retrieval.schemas import SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant
from tests.conftest import MANAGED, api_client, free_port, make_settings, needs_age, needs_bm25

A, B = "bk-a", "bk-b"
ANALYST = "bk_reader"
NOTES = (
    "Ines finished the harbour survey and sent it to Dana.",
    "The boat costs 300 euros per day in the summer.",
    "The marina opens at seven on weekdays.",
    "Lena booked a table at the harbour restaurant for Friday.",
    "Omar keeps the underwater camera in the blue locker.",
    "The reef near Faro is recovering well after the storm.",
    "Dana prefers green tea over coffee in the morning.",
    "The dive club meets every second Thursday at the lighthouse.",
)
TURNS = (
    ("Omar", "Did you finish the coral transect report yesterday?"),
    ("Ines", "Yes, and the parrotfish count doubled since March."),
    ("Omar", "Great, I will book the research vessel for Tuesday."),
    ("Dana", "Bring two spare batteries for the strobe lights."),
    ("Omar", "The harbour master approved our mooring permit."),
    ("Dana", "Lena checked the tide tables for the whole week."),
)
GRAPH = {
    "entities": [
        {"name": "Ines Duarte", "entity_type": "person", "observations": ["Prefers tea"]},
        {"name": "Reefwatch", "entity_type": "organization", "observations": ["Runs surveys"]},
        {"name": "Faro", "entity_type": "place"},
    ],
    "relations": [
        {"source": "Ines Duarte", "relation_type": "works_at", "target": "Reefwatch"},
        {"source": "Reefwatch", "relation_type": "part_of", "target": "Faro"},
    ],
}
QUERIES = (
    "harbour survey",
    "How much does the boat cost?",
    "When does the marina open?",
    "restaurant booking Friday",
    "Where is the underwater camera?",
    "reef recovery after the storm",
    "tea or coffee",
    "dive club meeting",
    "coral transect report",
    "parrotfish count",
    "research vessel Tuesday",
    "spare batteries strobe",
    "mooring permit",
    "tide tables",
    "Who works at Reefwatch?",
    "Ines Duarte",
    "Faro",
    "Where does Bo live?",
    "favourite colour",
    "lighthouse Thursday",
    "What did Omar book?",
    "Dana",
    "Lena",
    "summer prices",
    "weekday opening hours",
    "blue locker",
    "green tea",
    "surveys",
    "storm damage",
    "what changed in Bo's city",
)
Client = TestClient  # type: ignore[type-arg]


@dataclass(frozen=True)
class Source:
    keys: dict[str, str]  # tenant -> a read/write key of that tenant only
    analyst_role: str
    lists: Listed  # the 60 search lists


@dataclass(frozen=True)
class Restored:
    settings: Settings
    db: Database
    elephant: Elephant
    backup: BackupReport
    report: RestoreReport
    path: Path


def call(client: Client, method: str, path: str, tenant: str, body: Any = None) -> Any:
    response = client.request(
        method, path, json=body, params={"wait": "true"}, headers={"X-Elephant-Tenant": tenant}
    )
    assert response.status_code < 300, response.text
    return response.json()


Listed = list[list[tuple[str, float, Any]]]  # per search: (id, score, graph-lane rank)


def search_lists(elephant: Elephant) -> Listed:
    found = []
    for tenant in (A, B):
        for query in QUERIES:
            request = SearchRequest(query=query, limit=10)
            hits = search(elephant, tenant, request, record_access=False).hits
            found.append(
                [
                    (str(hit.id), round(hit.score, 6), getattr(hit.ranks, "graph", None))
                    for hit in hits
                ]
            )
    return found


@pytest.fixture(scope="module")
def source(settings: Settings, elephant: Elephant) -> Iterator[Source]:
    """Two tenants, each with notes, a conversation (turns, windows, facts), a graph,
    store items with history and feedback; a key per tenant and an analyst of A (its
    role lives in the run's cluster: dropped afterwards)."""
    with api_client(settings, elephant) as client:
        for tenant in (A, B):
            first = None
            for text in NOTES:
                committed = call(client, "POST", "/commit", tenant, {"text": f"{text} ({tenant})"})
                first = first or committed
            turns = [{"speaker": s, "text": t, "id": f"T{n}"} for n, (s, t) in enumerate(TURNS)]
            body = {"turns": turns, "session_date": "2024-05-08", "conversation_id": "dive-1"}
            call(client, "POST", "/commit_conversation", tenant, body)
            call(client, "POST", "/graph/record", tenant, GRAPH)
            for city in ("Lisbon", "Oslo", "Porto"):
                item = {"namespace": ["users", "bo"], "key": "city",
                        "value": {"content": f"Bo lives in {city}"}}  # fmt: skip
                call(client, "PUT", "/store/items", tenant, item)
            feedback = {"memory_id": first["memory_id"], "helpful": True}
            call(client, "POST", "/feedback", tenant, feedback)
    keys = {
        tenant: create_key(
            elephant.db, KeyIn(tenant=tenant, scopes=["read", "write"], name=f"key {tenant}")
        ).key
        for tenant in (A, B)
    }
    analyst = analysts.create(elephant.db, AnalystIn(name=ANALYST, tenants=[A]))
    # Each tenant over this small threshold gets its own HNSW indexes and recorded way.
    kept = tenant_indexes.keep(elephant.db.admin_connection, threshold=10)
    assert [way.way for way in kept.ways] == ["own", "own"], kept
    yield Source(keys=keys, analyst_role=analyst.role, lists=search_lists(elephant))
    analysts.revoke(elephant.db, ANALYST)


@pytest.fixture(scope="module")
def restored(
    tmp_path_factory: pytest.TempPathFactory,
    settings: Settings,
    source: Source,
    embedder: Embedder,
) -> Iterator[Restored]:
    """The source backed up, restored into a second embedded server on a new data dir,
    and opened there as `elephant serve` opens it."""
    work = tmp_path_factory.mktemp("backup")
    path = work / "elephant.backup"
    made = backup(settings, path)
    # Not under pytest's folder: each pytest start (another run beside this one) makes
    # /tmp/pytest-of-<user> 0700 again, and the server (the pgserver user, when root runs
    # the tests) could no longer reach a data dir below it.
    outside = Path(tempfile.mkdtemp(prefix="elephant-restore-test-"))
    target = make_settings(outside, embedded={"port": free_port()})
    try:
        report = restore(target, path)
        db = Database(target)
        db.open()
        runtime = Elephant(settings=target, db=db, embedder=embedder, llm=None)
        yield Restored(target, db, runtime, made, report, path)
        runtime.close_providers()
        db.close()
    finally:
        EmbeddedPostgres(target.data_dir / "embedded", port=target.embedded.port).stop()
        shutil.rmtree(outside, ignore_errors=True)


def admin(db: Database) -> psycopg.Connection[tuple[Any, ...]]:
    conn = psycopg.connect(db.admin_conninfo(), autocommit=True)
    conn.execute("SET row_security = off")
    return conn


def test_every_table_has_the_same_rows(elephant: Elephant, restored: Restored) -> None:
    with admin(elephant.db) as before, admin(restored.db) as after:
        counts_before, counts_after = count_rows(before), count_rows(after)
    assert counts_after == counts_before
    assert restored.report.mismatched == {} and restored.report.ok
    assert restored.report.rows == restored.backup.rows == sum(counts_before.values())
    if not MANAGED:  # the AGE catalog and each tenant's graph schema are counted too
        graphs = [name for name in counts_before if name.startswith("g_")]
        assert counts_before["ag_catalog.ag_graph"] >= 2 and len(graphs) > 10, "no AGE graph"
    for table in ("memories", "facts", "turns", "passages", "api_keys", "analyst_grants"):
        assert counts_before[f"public.{table}"] > 0, f"nothing planted in {table}"
    assert restored.report.invalid_indexes == []


def test_sixty_search_lists_are_identical(source: Source, restored: Restored) -> None:
    """The same ids in the same order for each of the 60 searches. Scores may move in
    the third decimal: the restore builds each BM25 index afresh, with corpus statistics
    counted from the rows, where the source's grew insert by insert (see
    app/db/keyword_index.py), so a lower keyword rank can differ and with it a fused
    score; never the order of the list."""
    after = search_lists(restored.elephant)
    assert len(source.lists) == len(after) == 60
    assert sum(1 for hits in source.lists if hits) >= 55, "too many empty lists to compare"
    differ = [
        (QUERIES[n % 30], before, now)
        for n, (before, now) in enumerate(zip(source.lists, after, strict=True))
        if [(hit, graph) for hit, _, graph in before] != [(hit, graph) for hit, _, graph in now]
    ]
    assert not differ, f"{len(differ)} of 60 lists differ: {differ[:2]}"
    by_graph = sum(1 for hits in after for _, _, graph in hits if graph is not None)
    assert by_graph > 0, "no hit came through the graph lane: the restored graph is not searched"


def test_keys_still_authenticate_and_stay_in_their_tenant(
    source: Source, restored: Restored
) -> None:
    for own, other in ((A, B), (B, A)):
        with api_client(restored.settings, restored.elephant, source.keys[own]) as client:
            mine = client.get(
                "/search", params={"q": "harbour"}, headers={"X-Elephant-Tenant": own}
            )
            assert mine.status_code == 200, mine.text
            assert mine.json()["results"], "the tenant's own search found nothing"
            theirs = client.get(
                "/search", params={"q": "harbour"}, headers={"X-Elephant-Tenant": other}
            )
            assert theirs.status_code == 403, theirs.text
    with api_client(restored.settings, restored.elephant, "elk_not_a_real_key") as client:
        refused = client.get("/search", params={"q": "harbour"}, headers={"X-Elephant-Tenant": A})
        assert refused.status_code == 401


def test_the_analyst_logs_in_and_reads_only_its_tenant(
    elephant: Elephant, source: Source, restored: Restored
) -> None:
    assert source.analyst_role in restored.report.roles_created
    with admin(elephant.db) as before, admin(restored.db) as after:
        secret = "SELECT rolpassword FROM pg_authid WHERE rolname = %s"
        verifier = before.execute(secret, (source.analyst_role,)).fetchone()
        assert verifier == after.execute(secret, (source.analyst_role,)).fetchone()
        assert verifier is not None and str(verifier[0]).startswith("SCRAM-SHA-256$")
    conninfo = analysts.login_conninfo(restored.db, source.analyst_role)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        seen = conn.execute("SELECT DISTINCT tenant_id FROM memories").fetchall()
        assert seen == [(A,)]
        conn.execute("SELECT set_config('elephant.tenant_id', %s, false)", (B,))
        assert conn.execute("SELECT count(*) FROM facts WHERE tenant_id = %s", (B,)).fetchone() == (
            0,
        )
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            conn.execute("DELETE FROM public.memories")  # memories: its fenced view


def row_security(db: Database) -> dict[str, tuple[bool, bool]]:
    with admin(db) as conn:
        rows = conn.execute(
            "SELECT n.nspname || '.' || c.relname, c.relrowsecurity, c.relforcerowsecurity "
            "FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace "
            "WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
        ).fetchall()
    return {name: (enabled, forced) for name, enabled, forced in rows}


def test_row_level_security_is_enabled_and_forced_as_before(
    elephant: Elephant, restored: Restored
) -> None:
    before, after = row_security(elephant.db), row_security(restored.db)
    assert after == before
    with admin(restored.db) as conn:
        tenant_tables = {
            f"{schema}.{table}"
            for schema, table in conn.execute(
                "SELECT table_schema, table_name FROM information_schema.columns "
                "WHERE column_name = 'tenant_id' AND table_schema = 'public' "
                "AND table_name IN (SELECT tablename FROM pg_tables WHERE schemaname = 'public')"
            ).fetchall()
        }
    assert len(tenant_tables) > 20
    # The migrator's tables (it manages keys, jobs, grants and the audit log for every
    # tenant): row-level security enabled for the app role, not forced on their owner.
    managed = {f"public.{t}" for t in ("api_keys", "audit_log", "jobs", "analyst_grants")}
    assert {after[name] for name in managed} == {(True, False)}
    loose = sorted(name for name in tenant_tables - managed if after[name] != (True, True))
    assert not loose, f"tenant tables without enabled and forced RLS after the restore: {loose}"


@needs_age
def test_the_graph_answers_cypher_and_takes_writes(restored: Restored, source: Source) -> None:
    assert len(restored.report.graphs) >= 2
    assert all(vertices >= 3 for vertices in restored.report.graphs.values())
    with api_client(restored.settings, restored.elephant, source.keys[A]) as client:
        found = call(client, "POST", "/graph/open", A, {"names": ["Ines Duarte", "Reefwatch"]})
        assert found["missing"] == []
        ines = next(node for node in found["entities"] if node["name"] == "Ines Duarte")
        relations = {(r["relation_type"], r["target"]) for r in ines["relations"]}
        assert ("works_at", "Reefwatch") in relations
        assert [o["content"] for o in ines["observations"]] == ["Prefers tea"]
        new = {"entities": [{"name": "Sagres", "entity_type": "place"}],
               "relations": [{"source": "Reefwatch", "relation_type": "part_of",
                              "target": "Sagres"}]}  # fmt: skip
        call(client, "POST", "/graph/record", A, new)
        again = call(client, "POST", "/graph/open", A, {"names": ["Sagres"]})
        assert again["missing"] == []


@needs_bm25
def test_bm25_and_tenant_indexes_come_back_working(restored: Restored, elephant: Elephant) -> None:
    assert restored.report.bm25, "no BM25 index was probed"
    assert restored.report.bm25_rebuilt == []
    assert all(reason.startswith("found") for reason in restored.report.bm25.values())
    with admin(elephant.db) as before, admin(restored.db) as after:
        listing = (
            "SELECT count(*) FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid "
            "JOIN pg_am AS a ON a.oid = c.relam WHERE a.amname = %s"
        )
        for method in ("hnsw", "bm25", "gin"):
            assert (
                after.execute(listing, (method,)).fetchone()
                == before.execute(listing, (method,)).fetchone()
            ), method
    assert restored.elephant.db.keyword.trusted
    with admin(elephant.db) as before, admin(restored.db) as after:
        own = tenant_indexes.existing_indexes(before)
        assert len(own) >= 4 and all(own.values()), own
        assert tenant_indexes.existing_indexes(after) == own
        assert restored.report.tenant_indexes == len(own)
        assert tenant_indexes.ways(after) == tenant_indexes.ways(before)


def test_a_restore_refuses_a_non_empty_target_and_writes_nothing(restored: Restored) -> None:
    with admin(restored.db) as conn:
        before = count_rows(conn)
        roles = conn.execute("SELECT count(*) FROM pg_roles").fetchone()
    with pytest.raises(Conflict, match="is not empty"):
        restore(restored.settings, restored.path)
    with admin(restored.db) as conn:
        assert count_rows(conn) == before
        assert conn.execute("SELECT count(*) FROM pg_roles").fetchone() == roles


def test_a_file_that_is_not_a_backup_is_refused(restored: Restored, tmp_path: Path) -> None:
    bogus = tmp_path / "notes.txt"
    bogus.write_text("not a backup")
    with pytest.raises(InvalidInput, match="not an Elephant backup"):
        restore(restored.settings, bogus)
    with pytest.raises(InvalidInput, match="exists"):
        backup(restored.settings, restored.path)


def test_the_cli_backs_up_and_restores_into_an_external_database(
    settings: Settings, restored: Restored, tmp_path: Path
) -> None:
    """`elephant backup --out` on the embedded source, `elephant restore` into an empty
    database named by DATABASE_URL (external mode) on the second server, whose roles now
    exist: they are kept, not created again."""
    assert restored.db.embedded is not None
    server = restored.db.embedded
    with psycopg.connect(server.conninfo(), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier("by_url")))
    runner = CliRunner()
    path = tmp_path / "cli.backup"
    env = {
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
    }
    made = runner.invoke(main, ["backup", "--out", str(path)], env=env)
    assert made.exit_code == 0, made.output
    url = f"postgresql://postgres@/by_url?host={server.socket_dir}&port={server.port}"
    external = {"DATABASE_URL": url, "ELEPHANT_DATA_DIR": str(tmp_path / "unused")}
    done = runner.invoke(main, ["restore", str(path)], env={**os.environ, **external})
    assert done.exit_code == 0, done.output
    assert '"mode": "external"' in done.output and '"roles_created": []' in done.output
    assert 'mismatched": {}' in done.output
    again = runner.invoke(main, ["restore", str(path)], env={**os.environ, **external})
    assert again.exit_code == 1 and "not empty" in again.output


def test_backup_and_restore_refuse_a_role_that_row_level_security_would_filter(
    restored: Restored,
) -> None:
    """External mode, as a plain login (no superuser, no BYPASSRLS): the backup would
    miss other tenants' rows and the restore could not write them; both refuse, and the
    target database stays empty."""
    assert restored.db.embedded is not None
    server = restored.db.embedded
    with psycopg.connect(server.conninfo(), autocommit=True) as conn:
        conn.execute("CREATE ROLE bk_plain LOGIN")
        conn.execute("CREATE DATABASE by_plain OWNER bk_plain")
    host = f"host={server.socket_dir}&port={server.port}"
    as_plain = make_settings(
        restored.settings.data_dir / "plain",
        database={"url": f"postgresql://bk_plain@/by_plain?{host}"},
    )
    with pytest.raises(Forbidden, match="BYPASSRLS"):
        restore(as_plain, restored.path)
    source = make_settings(
        restored.settings.data_dir / "plain",
        database={"url": f"postgresql://bk_plain@/{restored.settings.embedded.database}?{host}"},
    )
    with pytest.raises(Forbidden, match="BYPASSRLS"):
        backup(source, restored.path.with_name("never.backup"))
    assert not restored.path.with_name("never.backup").exists()
    with psycopg.connect(server.conninfo(dbname="by_plain"), autocommit=True) as conn:
        row = conn.execute(load_sql("backup/occupied.sql")).fetchone()
    assert row == (0, [])


def toc_end(dump: bytes, into: Path) -> int:
    """Where the archive's table of contents ends (its first data block starts): the
    shortest prefix that `pg_restore --list` reads whole, found by bisection."""
    probe = into / "prefix.dump"
    low, high = 1, len(dump)
    while low < high:
        middle = (low + high) // 2
        probe.write_bytes(dump[:middle])
        listed = subprocess.run(
            [str(binaries_dir() / "pg_restore"), "--list", str(probe)], capture_output=True
        )
        low, high = (low, middle) if listed.returncode == 0 else (middle + 1, high)
    return low


def damaged_copy(path: Path, into: Path) -> Path:
    """The backup with its dump cut where its data begins (pg_restore writes every
    table's definition, then fails on the first table's rows: psql alone would commit
    the empty tables) and one more role to create."""
    with tarfile.open(path) as tar:
        manifest = tar.extractfile("manifest.json")
        roles = tar.extractfile("roles.json")
        dump = tar.extractfile("database.dump")
        assert manifest is not None and roles is not None and dump is not None
        parts = {"manifest.json": manifest.read(), "database.dump": dump.read()}
        listed = json.loads(roles.read())
    extra = {**listed["roles"][0], "name": "bk_extra_role", "password": None, "login": False}
    listed["roles"].append(extra)
    parts["roles.json"] = json.dumps(listed).encode()
    parts["database.dump"] = parts["database.dump"][: toc_end(parts["database.dump"], into)]
    damaged = into / "damaged.backup"
    with tarfile.open(damaged, "w") as tar:
        for name, data in parts.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return damaged


def test_a_restore_that_fails_halfway_leaves_nothing(restored: Restored, tmp_path: Path) -> None:
    """pg_restore fails on a cut archive after psql ran every CREATE TABLE: the
    transaction is rolled back (psql never commits) and the role the restore created
    is dropped again."""
    assert restored.db.embedded is not None
    server = restored.db.embedded
    with psycopg.connect(server.conninfo(), autocommit=True) as conn:
        conn.execute("CREATE DATABASE by_damaged")
    host = f"host={server.socket_dir}&port={server.port}"
    target = make_settings(tmp_path, database={"url": f"postgresql://postgres@/by_damaged?{host}"})
    with pytest.raises(ToolFailed, match="nothing was restored"):
        restore(target, damaged_copy(restored.path, tmp_path))
    with psycopg.connect(server.conninfo(dbname="by_damaged"), autocommit=True) as conn:
        assert conn.execute(load_sql("backup/occupied.sql")).fetchone() == (0, [])
        role = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'bk_extra_role'")
        assert role.fetchone() is None
