"""Shared fixtures: one real embedded Postgres per test run, a fresh database per module.

Each module (or test) gets a new database whose schema is built by the real
migrations. Not a copy of a template database: pg_textsearch keeps in-memory
index state keyed by the index's identity, and copies of one template share
those identities, so two copies corrupt each other's BM25 indexes. Nothing is
mocked: tests talk to PostgreSQL 18 with its extensions.

``ELEPHANT_TEST_MANAGED=1`` runs the suite in the managed-Postgres mode (as on RDS,
Cloud SQL, Supabase, Neon): every database is built with
``database.optional_extensions = ()``, so AGE and pg_textsearch are not created
(the server still has them; the databases do not). Tests that are about AGE or BM25
themselves skip there (``needs_age``, ``needs_bm25``).

``ELEPHANT_TEST_POOLER=1`` runs the suite through a real PgBouncer in transaction pooling
mode (tests/pgbouncer_support.py) with two server connections per database and role:
the app and worker pools of every ``make_settings`` log in through it
(``database.pooler = transaction``, ``app_url``, ``worker_url``); the migrator stays
direct. Tests that cannot work through a pooler skip there (``not_pooled``).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
import uvicorn
from litestar.testing import TestClient
from psycopg import sql
from uvicorn.config import LOGGING_CONFIG

from app.api import create_app
from app.config import EmbeddingSettings, Settings
from app.config.database import analyst_group
from app.db import Database
from app.db import migrate as migrations
from app.db.embedded import EmbeddedPostgres
from app.providers.embedder import Embedder, LocalEmbedder
from app.providers.embedder_ollama import OllamaEmbedder
from app.services.access.keys import KeyIn, create_key
from app.services.runtime import Elephant
from tests.pgbouncer_support import PgBouncer

_counter = itertools.count()


def _switch(name: str) -> bool:
    """ELEPHANT_TEST_<name>=1, read once. The variable leaves the environment (processes the
    tests start refuse unknown ELEPHANT_* names) for TESTS_ELEPHANT_<name>, which the
    pytest-xdist workers, started after this import, inherit and read instead."""
    kept = f"TESTS_ELEPHANT_{name}"
    value = os.environ.pop(f"ELEPHANT_TEST_{name}", None) or os.environ.get(kept)
    if value is not None:
        os.environ[kept] = value
    return value == "1"


MANAGED = _switch("MANAGED")
if MANAGED:
    # Processes the tests start (CLI, stdio server) read ELEPHANT_* and refuse unknown
    # names: they get the setting the switch stands for instead.
    os.environ.setdefault("ELEPHANT_DATABASE_OPTIONAL_EXTENSIONS", "none")
needs_age = pytest.mark.skipif(
    MANAGED, reason="needs Apache AGE, which ELEPHANT_TEST_MANAGED=1 does not create"
)
needs_bm25 = pytest.mark.skipif(
    MANAGED, reason="needs pg_textsearch (BM25), which ELEPHANT_TEST_MANAGED=1 does not create"
)
POOLER = _switch("POOLER")
POOLER_POOL_SIZE = 2  # server connections per database and role: shared, as in production
_pooler: list[PgBouncer] = []  # the run's PgBouncer, once pg_server started it


def not_pooled(reason: str) -> pytest.MarkDecorator:
    """Skip under ELEPHANT_TEST_POOLER=1, saying why the test cannot run through a pooler."""
    return pytest.mark.skipif(POOLER, reason=f"ELEPHANT_TEST_POOLER=1: {reason}")


def make_settings(data_dir: Path, **sections: dict[str, Any]) -> Settings:
    """Settings for tests: explicit values only, never the machine's ELEPHANT_* variables
    (but ELEPHANT_TEST_MANAGED=1: no optional extensions unless the test names them;
    ELEPHANT_TEST_POOLER=1: the embedded database's app and worker through PgBouncer)."""
    if MANAGED:
        sections = {
            **sections,
            "database": {"optional_extensions": (), **sections.get("database", {})},
        }
    if _pooler and _on_the_run_server(data_dir, sections):
        sections = {**sections, "database": {**pooled(sections), **sections.get("database", {})}}
    return Settings.model_validate({"data_dir": data_dir, **sections})


def _on_the_run_server(data_dir: Path, sections: dict[str, dict[str, Any]]) -> bool:
    """The run's PgBouncer serves the run's server only: not an external URL, nor a
    server a test starts of its own (another data dir or port)."""
    if "url" in sections.get("database", {}) or "port" in sections.get("embedded", {}):
        return False
    return (Path(data_dir) / "embedded").resolve() == _pooler[0].server.root


def pooled(sections: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The database settings that put the run's PgBouncer between the app and the
    embedded database named in ``sections``."""
    bouncer = _pooler[0]
    name = sections.get("embedded", {}).get("database", "elephant")
    options = sections.get("database", {})
    return {
        "pooler": "transaction",
        "app_url": bouncer.url(options.get("app_role", "elephant_app"), name),
        "worker_url": bouncer.url(options.get("worker_role", "elephant_worker"), name),
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def pg_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("elephant")


@pytest.fixture(scope="session")
def pg_server(pg_data_dir: Path) -> Iterator[EmbeddedPostgres]:
    """The run's PostgreSQL server (and, with ELEPHANT_TEST_POOLER=1, its PgBouncer)."""
    # as Database.start_server: analysts reach the modules' databases, not `postgres`
    server = EmbeddedPostgres(pg_data_dir / "embedded", analyst_group=analyst_group("elephant_app"))
    server.start()
    if POOLER:
        bouncer = PgBouncer(
            pg_data_dir / "pgbouncer",
            server,
            free_port(),
            pool_size=POOLER_POOL_SIZE,
            users=("elephant_app", "elephant_worker"),
        )
        _pooler.append(bouncer.start())
    try:
        yield server
    finally:
        if _pooler:
            _pooler.pop().stop()
        server.stop()


@pytest.fixture(scope="session")
def new_database(pg_server: EmbeddedPostgres, pg_data_dir: Path) -> Callable[..., str]:
    """Create a database for a test, migrated to head (or left empty); ``optional_extensions``
    overrides the run's (all, or none with ELEPHANT_TEST_MANAGED=1)."""
    settings = make_settings(pg_data_dir)
    params = migrations.SchemaParams(
        embedding_dim=settings.embedding.dim,
        embedding_model=settings.embedding.model,
        app_role=settings.database.app_role,
        optional_extensions=settings.database.optional_extensions,
    )

    def create(
        hint: str, *, empty: bool = False, optional_extensions: tuple[str, ...] | None = None
    ) -> str:
        slug = re.sub(r"[^a-z0-9]+", "_", hint.lower())[:40]
        name = f"t_{slug}_{next(_counter)}"
        with psycopg.connect(pg_server.conninfo(), autocommit=True) as conn:
            conn.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE template0").format(sql.Identifier(name))
            )
        if not empty:
            chosen = params
            if optional_extensions is not None:
                chosen = dataclasses.replace(params, optional_extensions=optional_extensions)
            migrations.upgrade(pg_server.conninfo(dbname=name), chosen)
        return name

    return create


@pytest.fixture(scope="module")
def settings(
    request: pytest.FixtureRequest, pg_data_dir: Path, new_database: Callable[..., str]
) -> Settings:
    """Settings pointing at a fresh database for this module on the run's server."""
    name = new_database(request.module.__name__.rsplit(".", 1)[-1])
    return make_settings(pg_data_dir, embedded={"database": name})


@pytest.fixture(scope="module")
def db(settings: Settings) -> Iterator[Database]:
    database = Database(settings)
    database.open()
    yield database
    database.close()


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real default model (all-MiniLM-L6-v2), loaded once per run, up front: the
    model loads lazily on first use, and a test's first request must not pay for it
    (a bounded HTTP read would time out on a busy machine)."""
    model = LocalEmbedder(EmbeddingSettings())
    model.embed_queries(["warm up"])
    return model


@pytest.fixture(scope="module")
def elephant(settings: Settings, db: Database, embedder: Embedder) -> Iterator[Elephant]:
    """The runtime on this module's database: real embedder, offline (no) LLM. Its
    background threads (the access recorder) stop before the database closes."""
    runtime = Elephant(settings=settings, db=db, embedder=embedder, llm=None)
    yield runtime
    runtime.close_providers()


def operator_key(db: Database, name: str = "tests") -> str:
    """An admin key for every tenant with every scope: tests name the tenant by header."""
    request = KeyIn(all_tenants=True, scopes=["read", "write", "admin"], name=name)
    return create_key(db, request).key


def api_client(settings: Settings, elephant: Elephant, key: str | None = None) -> TestClient:  # type: ignore[type-arg]
    """The API in its default mode (API keys), at a loopback host, with an operator key
    (or ``key``) sent on every request. Use as a context manager."""
    token = key or operator_key(elephant.db)
    client = TestClient(app=create_app(settings, elephant), base_url="http://127.0.0.1:7777")
    client.headers["Authorization"] = f"Bearer {token}"
    return client


def count_rows(db: Database, tenant: str, table: str) -> int:
    with db.tenant(tenant) as conn:
        row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    assert row is not None
    return int(row[0])


def unreachable_embedder() -> Embedder:
    """The Ollama client aimed at a port nobody listens on: every call fails fast, as when
    the embedding service is down."""
    return OllamaEmbedder(
        EmbeddingSettings.model_validate(
            {
                "provider": "ollama",
                "model": "nomic-embed-text",
                "dim": 384,
                "ollama_url": f"http://127.0.0.1:{free_port()}",
                "timeout_s": 1,
            }
        )
    )


Refuse = Callable[[bool], None]


@contextmanager
def refusable_database(
    pg_server: EmbeddedPostgres,
    new_database: Callable[..., str],
    settings: Settings,
    label: str,
    **sections: dict[str, Any],
) -> Iterator[tuple[Settings, Database, Refuse]]:
    """An app database of its own, and a switch that refuses (or allows) every connection
    to it: the server answers, the database does not, as in an outage."""
    name = new_database(label)
    own = make_settings(settings.data_dir, embedded={"database": name}, **sections)
    database = Database(own)
    database.open()

    def refuse(refused: bool) -> None:
        with psycopg.connect(pg_server.conninfo(), autocommit=True) as conn:
            conn.execute(
                sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS {}").format(
                    sql.Identifier(name), sql.SQL("false" if refused else "true")
                )
            )
            if refused:
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                    (name,),
                )

    try:
        yield own, database, refuse
    finally:
        refuse(False)
        database.close()


@contextmanager
def serve_in_thread(
    app: Any, *, log_level: str = "warning", log_config: dict[str, Any] | None = LOGGING_CONFIG
) -> Iterator[str]:
    """An ASGI app served by a real uvicorn on a free loopback port, in a thread; yields
    its base URL (``log_config=None``: the app's own logging, as `elephant serve` runs)."""
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=free_port(),
            log_level=log_level,
            log_config=log_config,
            proxy_headers=False,  # as the CLI runs it: the app reads auth.trusted_proxies
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive(), "uvicorn stopped during start-up"
        assert time.monotonic() < deadline, "uvicorn did not start within 30 s"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)


# ------------------------------------------------------------ web console (app/console)


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """One headless chromium for the run (tests/console_support.py)."""
    from tests.console_support import start_browser

    driver = start_browser()
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def console_site(settings: Settings, elephant: Elephant) -> Iterator[Any]:
    """The API with its console served on a loopback port, keys mode, and keys of the
    module's tenant by scope: "read", "write" (read, write), "admin" (all three)."""
    from tests.console_support import ConsoleSite

    tenant = "console"
    keys = {
        name: create_key(db=elephant.db, request=KeyIn(tenant=tenant, scopes=scopes, name=name)).key
        for name, scopes in (
            ("read", ["read"]),
            ("write", ["read", "write"]),
            ("admin", ["read", "write", "admin"]),
        )
    }
    with serve_in_thread(create_app(settings, elephant)) as url:
        yield ConsoleSite(url=url, tenant=tenant, keys=keys)
