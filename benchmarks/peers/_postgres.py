"""The PostgreSQL server the Postgres peers (LangGraph's PostgresStore, langchain-postgres)
run on: the embedded server the benchmark already runs for Elephant, each peer in a
database of its own.

The runner points this module at Elephant's LoCoMo data directory (``use``) before any
peer opens. The first Postgres peer to open then starts the server there the way Elephant
does (``app.db.runtime.Database.start_server``: the same PostgreSQL 18 build, pgvector,
the same memory settings), or adopts it when Elephant already runs it, and holds it (one
more holder of ``EmbeddedPostgres``) until the runner calls ``shutdown`` at the end, so
the server outlives Elephant's LoCoMo pass and serves the synthetic sizes too. With
DATABASE_URL set, Elephant runs on that server, and so do these peers.

Every ``open`` of a peer gets a fresh database (``create``), dropped at its ``close``.
Without ``use`` (an adapter's self-check) the server lives in a temporary directory.
"""

from __future__ import annotations

import atexit
import itertools
import re
import shutil
import tempfile
from pathlib import Path
from urllib.parse import quote

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from app.config import Settings
from app.db.runtime import Database

_data_dir: Path | None = None
_database: Database | None = None
_scratch: Path | None = None  # a temporary data dir of our own (no ``use``)
_numbers = itertools.count(1)


def use(data_dir: Path) -> None:
    """Run on the server of Elephant's data directory ``data_dir`` (its LoCoMo run's)."""
    global _data_dir
    _data_dir = data_dir


def _server() -> Database:
    """Elephant's server, started or adopted on first use and held until ``shutdown``."""
    global _database, _scratch
    if _database is None:
        data_dir = _data_dir
        if data_dir is None:
            _scratch = Path(tempfile.mkdtemp(prefix="elephant-peers-pg-"))
            data_dir = _scratch
        data_dir.mkdir(parents=True, exist_ok=True)
        settings = Settings.model_validate(
            {"data_dir": str(data_dir), "log": {"level": "WARNING"}, "worker": {"enabled": False}}
        )
        database = Database(settings)
        database.start_server()
        _database = database
        atexit.register(shutdown)
    return _database


def _admin(dbname: str | None = None) -> str:
    """A superuser's libpq conninfo for ``dbname`` (the server's own database if None)."""
    database = _server()
    conninfo = database.admin_conninfo()
    return conninfo if dbname is None else make_conninfo(conninfo, dbname=dbname)


def create(peer: str) -> str:
    """A new, empty database for one ``open`` of ``peer``; its libpq conninfo."""
    name = f"peers_{re.sub(r'[^a-z0-9_]', '_', peer.lower())}_{next(_numbers)}"
    with psycopg.connect(_admin(), autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return _admin(name)


def drop(conninfo: str) -> None:
    """Drop the database ``create`` made (its connections are ended first)."""
    name = conninfo_to_dict(conninfo)["dbname"]
    with psycopg.connect(_admin(), autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def sqlalchemy_url(conninfo: str, driver: str = "psycopg") -> str:
    """The same database as an SQLAlchemy URL (``postgresql+psycopg://``), a Unix socket
    directory passed as the ``host`` query parameter."""
    parts = {k: str(v) for k, v in conninfo_to_dict(conninfo).items() if v is not None}
    user = quote(parts.pop("user", "postgres"), safe="")
    password = parts.pop("password", None)
    host = parts.pop("host", "")
    port = parts.pop("port", "")
    dbname = quote(parts.pop("dbname"), safe="")
    auth = user + (f":{quote(password, safe='')}" if password else "")
    if host.startswith("/"):  # a socket directory
        query = f"?host={quote(host, safe='/')}" + (f"&port={port}" if port else "")
        return f"postgresql+{driver}://{auth}@/{dbname}{query}"
    netloc = host + (f":{port}" if port else "")
    return f"postgresql+{driver}://{auth}@{netloc}/{dbname}"


def describe() -> str:
    """The server's PostgreSQL and pgvector versions, e.g. "PostgreSQL 18.1, pgvector 0.8.1"."""
    with psycopg.connect(_admin(), autocommit=True) as conn:
        version = conn.execute("SHOW server_version").fetchone()
        vector = conn.execute(
            "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
        ).fetchone()
    where = "embedded" if _server().embedded is not None else "DATABASE_URL"
    pgvector = f", pgvector {vector[0]}" if vector else ", no pgvector"
    return f"PostgreSQL {version[0] if version else '?'}{pgvector} ({where}, Elephant's server)"


def shutdown() -> None:
    """Release the server (stopped when Elephant no longer holds it either)."""
    global _database, _scratch
    if _database is not None:
        _database.close()
        _database = None
    if _scratch is not None:
        shutil.rmtree(_scratch, ignore_errors=True)
        _scratch = None
