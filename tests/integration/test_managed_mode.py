"""The managed-Postgres mode (RDS, Cloud SQL, Supabase, Neon): pgvector, no AGE, no pg_textsearch.

Whatever ELEPHANT_TEST_MANAGED says, this module builds its database the way
`elephant migrate` does with ``database.optional_extensions = ()`` (an empty
database, migrated by Database.open), on the run's server, which has both
extensions: they exist on the server, the database just does not create them.
The last test also migrates as a service's admin would: not a superuser.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from litestar.testing import TestClient
from msgspec import UnsetType
from psycopg import sql

from app.cli import main
from app.config import Settings
from app.db import Database
from app.db.capabilities import NOT_WANTED
from app.db.embedded import EmbeddedPostgres
from app.providers.embedder import Embedder
from app.services.memory.commit import commit_note
from app.services.memory.schemas import NoteIn
from app.services.ops.doctor import diagnose
from app.services.ops.health import health
from app.services.retrieval.schemas import SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant
from tests.conftest import api_client, make_settings

Client = TestClient  # type: ignore[type-arg]
T = "managed"
NOTES = [
    "Zebulon keeps a zymurgy journal about his sourdough starter",
    "Priya's cat Biscuit is allergic to chicken, so she buys salmon kibble",
    "The team moved the memory service to a managed Postgres in March",
]


@pytest.fixture(scope="module")
def managed_settings(pg_data_dir: Path, new_database: Callable[..., str]) -> Settings:
    name = new_database("managed_mode", empty=True)
    return make_settings(
        pg_data_dir, embedded={"database": name}, database={"optional_extensions": ()}
    )


@pytest.fixture(scope="module")
def managed_db(managed_settings: Settings) -> Iterator[Database]:
    database = Database(managed_settings)
    database.open()  # auto_migrate: the schema is built here, in managed mode
    yield database
    database.close()


@pytest.fixture(scope="module")
def managed(managed_settings: Settings, managed_db: Database, embedder: Embedder) -> Elephant:
    elephant = Elephant(settings=managed_settings, db=managed_db, embedder=embedder, llm=None)
    for text in NOTES:
        commit_note(elephant, T, NoteIn(text=text, source="chat"), wait=True)
    return elephant


def test_the_migrations_create_neither_age_nor_pg_textsearch(managed_db: Database) -> None:
    with managed_db.admin_connection() as conn:
        extensions = {row[0] for row in conn.execute("SELECT extname FROM pg_extension")}
        available = {row[0] for row in conn.execute("SELECT name FROM pg_available_extensions")}
        bm25 = conn.execute(
            "SELECT count(*) FROM pg_indexes WHERE indexdef LIKE '%USING bm25%'"
        ).fetchone()
        ag_catalog = conn.execute("SELECT to_regnamespace('ag_catalog')").fetchone()
        keyword = conn.execute(
            "SELECT count(*) FROM pg_proc WHERE proname LIKE 'elephant_keyword_%'"
        ).fetchone()
    assert {"age", "pg_textsearch"} <= available  # the server has them: left out by choice
    assert "vector" in extensions
    assert not extensions & {"age", "pg_textsearch"}, extensions
    assert bm25 == (0,) and ag_catalog == (None,)
    # the tsvector keyword lane's functions (migration 0009) and the bm25 lane's word
    # counts (0019, created with or without pg_textsearch: the tables are the same)
    assert keyword == (3,)


def test_capabilities_report_both_absent_by_choice(managed_db: Database) -> None:
    caps = managed_db.capabilities
    assert caps is not None
    assert not caps.age and not caps.textsearch and caps.managed
    report = caps.report(managed_db.settings.database.optional_extensions)
    for name in ("age", "pg_textsearch"):
        assert report[name] == {
            "installed": False,
            "note": NOT_WANTED,
            "available_version": caps.available[name],
        }
    assert report["vector"] == {"installed": True, "version": caps.installed["vector"]}


def test_app_connections_keep_ag_catalog_off_their_search_path(managed_db: Database) -> None:
    with managed_db.connection() as conn:
        row = conn.execute("SELECT current_setting('search_path'), current_user").fetchone()
        conn.rollback()
    assert row is not None
    assert "ag_catalog" not in row[0] and row[1] == managed_db.settings.database.app_role


def test_commit_and_search_use_the_tsvector_keyword_lane(managed: Elephant) -> None:
    lanes = {"windows": 0, "facts": 0, "keyword": 10}
    result = search(managed, T, SearchRequest(query="zymurgy journal", lanes=lanes, explain=True))
    assert result.explain is not None and result.explain.keyword_engine == "tsvector"
    assert result.hits and {hit.text for hit in result.hits} == {NOTES[0]}  # the note, its fact
    assert result.hits[0].kind == "note" and result.hits[0].ranks.keyword == 1
    everything = search(managed, T, SearchRequest(query="What is Biscuit allergic to?"))
    assert everything.hits and "Biscuit" in everything.hits[0].text


def test_the_api_commits_searches_and_reports_the_managed_mode(
    managed_settings: Settings, managed: Elephant
) -> None:
    headers = {"X-Elephant-Tenant": "managed-api"}
    with api_client(managed_settings, managed) as client:
        stored = client.post(
            "/commit", json={"text": "Ines repairs vintage accordions in Porto"}, headers=headers
        )
        assert stored.status_code == 201, stored.text
        found = client.post(
            "/search", json={"query": "accordions", "explain": True}, headers=headers
        )
        assert found.status_code == 200, found.text
        body = found.json()
        assert body["explain"]["keyword_engine"] == "tsvector"
        assert body["results"][0]["id"] == stored.json()["memory_id"]
        assert body["results"][0]["ranks"]["keyword"] == 1
        stats = client.get("/stats", headers=headers).json()
        assert stats["keyword_engine"] == "tsvector"
        names = {index["name"] for index in stats["storage"]["indexes"]}
        assert {"memories_tsv_gin", "facts_tsv_gin"} <= names
        assert not any(name.endswith("_bm25") for name in names)
        database = client.get("/health").json()["database"]
    assert database["managed"] is True and database["keyword_search"] == "tsvector"
    assert database["extensions"]["age"]["note"] == NOT_WANTED
    assert database["extensions"]["pg_textsearch"]["installed"] is False


def test_health_and_doctor_say_the_extensions_are_left_out_not_missing(
    managed: Elephant,
) -> None:
    report = health(managed.db)
    assert report.status == "ok" and report.database.managed is True
    checks = {check.name: check for check in diagnose(managed).checks}
    for name in ("age", "pg_textsearch"):
        assert checks[name].level == "ok", checks[name]
        assert "managed-Postgres mode" in checks[name].detail
    assert "tsvector" in checks["pg_textsearch"].detail
    assert checks["age"].detail.endswith(f"knowledge graph: {report.database.graph}")
    env = {
        "ELEPHANT_DATA_DIR": str(managed.settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": managed.settings.embedded.database,
        "ELEPHANT_DATABASE_OPTIONAL_EXTENSIONS": "none",
    }
    result = CliRunner().invoke(main, ["doctor", "--database-only"], env=env)
    assert result.exit_code == 0, result.output
    assert "ok    pg_textsearch: not created: database.optional_extensions" in result.output, (
        result.output
    )
    assert "ok    age: not created" in result.output, result.output


def test_with_the_extensions_wanted_but_absent_the_doctor_warns(
    managed: Elephant, pg_data_dir: Path
) -> None:
    """The same database under the default setting: absent is then a gap, not a choice."""
    wanting = make_settings(
        pg_data_dir,
        embedded={"database": managed.settings.embedded.database},
        database={"optional_extensions": ("age", "pg_textsearch")},
    )
    with Database(wanting) as database:
        elephant = Elephant(settings=wanting, db=database, embedder=managed.embedder, llm=None)
        checks = {check.name: check for check in diagnose(elephant).checks}
        extensions = health(database).database.extensions
    assert checks["age"].level == checks["pg_textsearch"].level == "warn"
    assert "managed-Postgres mode" not in checks["age"].detail
    assert not isinstance(extensions, UnsetType)
    assert extensions["age"].note != NOT_WANTED


def test_a_migrator_that_is_not_a_superuser_builds_and_serves_it(
    pg_server: EmbeddedPostgres,
    tmp_path: Path,
    new_database: Callable[..., str],
    embedder: Embedder,
) -> None:
    """As on a managed service: the DATABASE_URL role owns the database and may create
    roles, but is no superuser and may not read every setting; pgvector is there."""
    name = new_database("managed_owner", empty=True)
    with psycopg.connect(pg_server.conninfo(), autocommit=True) as conn:
        conn.execute("CREATE ROLE mg_owner LOGIN CREATEROLE")
        conn.execute(sql.SQL("ALTER DATABASE {} OWNER TO mg_owner").format(sql.Identifier(name)))
    with psycopg.connect(pg_server.conninfo(dbname=name), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")  # what the service's allow-list offers
    url = f"postgresql://mg_owner@/{name}?host={pg_server.socket_dir}&port={pg_server.port}"
    database = {"url": url, "app_role": "mg_app", "worker_role": "mg_worker"}
    settings = make_settings(tmp_path, database={**database, "optional_extensions": ()})
    with Database(settings) as db:
        elephant = Elephant(settings=settings, db=db, embedder=embedder, llm=None)
        commit_note(elephant, "svc", NoteIn(text=NOTES[0], source="chat"), wait=True)
        lanes = {"windows": 0, "facts": 0, "keyword": 10}
        found = search(elephant, "svc", SearchRequest(query="zymurgy", lanes=lanes, explain=True))
        # The worker (which reads no tenant rows) lists tenants and schedules maintenance
        # through owner-run functions: under FORCE row level security on tenants too.
        with db.worker_connection() as conn:
            listed = [r[0] for r in conn.execute("SELECT elephant_maintenance_tenants()")]
            queued = conn.execute(
                "SELECT elephant_schedule_maintenance('maintain_decay', 3600, 3)"
            ).fetchone()
            scope = conn.execute(
                "SELECT current_setting('elephant.maintenance_scope', true)"
            ).fetchone()
        with db.admin_connection() as conn:
            row = conn.execute(
                "SELECT r.rolsuper, "
                "       (SELECT array_agg(DISTINCT pg_get_userbyid(proowner)) FROM pg_proc "
                "         WHERE proname LIKE 'elephant_keyword_%'), "
                "       has_schema_privilege('mg_app_keyword', 'public', 'CREATE') "
                "FROM pg_roles AS r WHERE r.rolname = current_user"
            ).fetchone()
    assert db.mode == "external" and db.capabilities is not None and db.capabilities.managed
    assert found.explain is not None and found.explain.keyword_engine == "tsvector"
    assert found.hits and found.hits[0].text == NOTES[0] and found.hits[0].ranks.keyword == 1
    assert row == (False, ["mg_app_keyword"], False)  # CREATE was lent for the ALTER only
    assert "svc" in listed and queued == (1,)
    assert scope is not None and scope[0] in (None, "")  # the scope was put back
