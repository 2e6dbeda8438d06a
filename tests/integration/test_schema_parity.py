"""One schema however a database got to head: fresh, upgraded with data, migrated twice,
or downgraded to base and upgraded again.

Migrations are frozen and the views, functions and comments of ``sql/objects/`` are
re-applied at head (migrations/README.md); these tests compare ``pg_dump --schema-only``
of such databases, normalised, and print the diff when they differ.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from app.db import Database
from app.db.embedded import SERVICE_USER, EmbeddedPostgres, binaries_dir
from tests.conftest import make_settings

EARLY = "0004_sessions"
GRAPH = "g_acme_parity"  # a graph written before the upgrade (its schema is data, not schema)
DIM = 384

Opener = Callable[[str], AbstractContextManager[Database]]

_HEADER = re.compile(r"^-- (?:Name|Data for Name|TOC entry): ", re.MULTILINE)
_NOISE = re.compile(r"^(--.*|SET .*|SELECT pg_catalog\.set_config\(.*|\\(un)?restrict .*|\s*)$")


# ------------------------------------------------------------------ dumps


def schema_dump(server: EmbeddedPostgres, dbname: str, *, exclude: tuple[str, ...] = ()) -> str:
    """``pg_dump --schema-only``, normalised: one block per object (comments, SET lines and
    the random ``\\restrict`` key dropped), blocks sorted, schemas in ``exclude`` left out.

    pg_dump runs as the server's OS user: the socket directory is private to it (the
    embedded server runs as ``pgserver`` when we are root)."""
    args = [str(binaries_dir() / "pg_dump"), "--schema-only", "--no-tablespaces"]
    args += [f"--exclude-schema={schema}" for schema in exclude]
    result = subprocess.run(
        [*args, "--dbname", server.conninfo(dbname=dbname)],
        capture_output=True,
        text=True,
        user=SERVICE_USER if os.geteuid() == 0 else None,
        cwd=server.root,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, f"pg_dump {dbname} failed:\n{result.stderr}"
    blocks = []
    for block in _HEADER.split(result.stdout):
        lines = [line.rstrip() for line in block.splitlines() if not _NOISE.match(line)]
        if lines:
            blocks.append("\n".join(lines))
    return "\n\n".join(sorted(blocks)) + "\n"


def assert_same_schema(
    expected: str, actual: str, what: str, reference: str = "a fresh database"
) -> None:
    if expected != actual:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                reference,
                what,
                n=2,
            )
        )
        pytest.fail(f"{what} differs from {reference} (pg_dump --schema-only):\n{diff}")


# ------------------------------------------------------------------ databases


@pytest.fixture(scope="module")
def database(
    pg_server: EmbeddedPostgres, pg_data_dir: Path, new_database: Callable[..., str]
) -> Opener:
    """An empty database and the Database that migrates it (its settings, its schema
    parameters), closed afterwards."""

    @contextmanager
    def open_empty(hint: str) -> Iterator[Database]:
        name = new_database(hint, empty=True)
        db = Database(make_settings(pg_data_dir, embedded={"database": name}))
        db.start_server()
        try:
            yield db
        finally:
            db.close()

    return open_empty


@pytest.fixture(scope="module")
def fresh(pg_server: EmbeddedPostgres, database: Opener) -> str:
    """The schema of a database migrated from empty to head in one go."""
    with database("fresh") as db:
        db.migrate()
        dump = schema_dump(pg_server, db.settings.embedded.database)
    for expected in ("CREATE TABLE public.memories", "CREATE VIEW public.graph_entities"):
        assert expected in dump, "the dump holds the schema (else every comparison is void)"
    return dump


def run(db: Database, statement: str | sql.Composed, *params: object) -> None:
    with psycopg.connect(db.admin_conninfo(), autocommit=True) as conn:
        conn.execute(statement, params or None)  # type: ignore[arg-type]


def write_rows_at_early_revision(db: Database) -> None:
    """What a database holds after some use at 0004: a tenant, a conversation with turns,
    a window, a fact, a job, a handoff and a gate decision (as the superuser, in the
    columns 0004 has)."""
    vector = "[" + ",".join(["0.1"] * DIM) + "]"
    with psycopg.connect(db.admin_conninfo()) as conn:
        conn.execute("INSERT INTO tenants (id) VALUES ('acme')")
        row = conn.execute(
            "INSERT INTO conversations (tenant_id, external_id) VALUES ('acme', 'c1') RETURNING id"
        ).fetchone()
        assert row is not None
        conversation = row[0]
        conn.execute(
            "INSERT INTO turns (tenant_id, conversation_id, seq, speaker, text, source_turn_id) "
            "VALUES ('acme', %s, 0, 'Caroline', 'I moved to Lisbon.', 'D1:1'), "
            "('acme', %s, 1, 'Mel', 'How is Portugal?', 'D1:2')",
            (conversation, conversation),
        )
        row = conn.execute(
            "INSERT INTO memories (tenant_id, kind, text, embedding, content_hash, "
            "conversation_id, turn_start, turn_end, source_turn_ids) VALUES ('acme', 'window', "
            "'Caroline: I moved to Lisbon. Mel: How is Portugal?', %s::vector, 'h1', %s, 0, 1, "
            "'{D1:1,D1:2}') RETURNING id",
            (vector, conversation),
        ).fetchone()
        assert row is not None
        conn.execute(
            "INSERT INTO facts (tenant_id, memory_id, subject, text, embedding, content_hash) "
            "VALUES ('acme', %s, 'Caroline', 'Caroline lives in Lisbon', %s::vector, 'f1')",
            (row[0], vector),
        )
        conn.execute("INSERT INTO jobs (tenant_id, kind) VALUES ('acme', 'extract_facts')")
        conn.execute(
            "INSERT INTO handoffs (tenant_id, project, summary, generator) "
            "VALUES ('acme', 'elephant', 'Moved the queue to Postgres', 'offline')"
        )
        conn.execute(
            "INSERT INTO admission_log (tenant_id, memory_id, kind, source, text_preview, "
            "content_hash, decision, reason, scorer) VALUES ('acme', %s, 'window', 'api', "
            "'Caroline: I moved', 'h1', 'forced', 'test', 'test')",
            (row[0],),
        )


def write_graph_at_0005(db: Database) -> bool:
    """A tenant graph with two entities and a relation, made as 0005's code made them;
    False when the database has no AGE (managed-Postgres mode)."""
    with psycopg.connect(db.admin_conninfo()) as conn:
        if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'age'").fetchone() is None:
            return False
        conn.execute("SET LOCAL search_path = ag_catalog, public")
        conn.execute("SELECT ag_catalog.create_graph(%s)", (GRAPH,))
        conn.execute("INSERT INTO graphs (tenant_id, graph_name) VALUES ('acme', %s)", (GRAPH,))
        conn.execute(
            sql.SQL(
                "SELECT * FROM ag_catalog.cypher({}, $c$ CREATE "
                "(:Entity {{key: 'lisbon', name: 'Lisbon', role: 'place'}})"
                "-[:depends_on {{epistemic: 'assertion'}}]->"
                "(:Entity {{key: 'portugal', name: 'Portugal', role: 'place'}}) "
                "$c$) AS (v ag_catalog.agtype)"
            ).format(sql.Literal(GRAPH))
        )
    return True


# ------------------------------------------------------------------ tests


def test_an_upgraded_database_with_rows_has_the_fresh_schema(
    pg_server: EmbeddedPostgres, database: Opener, fresh: str
) -> None:
    with database("upgraded") as db:
        db.migrate(EARLY)
        write_rows_at_early_revision(db)
        db.migrate("0005_graph")
        with_graph = write_graph_at_0005(db)
        db.migrate()
        upgraded = schema_dump(pg_server, db.settings.embedded.database, exclude=(GRAPH,))
        with psycopg.connect(db.admin_conninfo()) as conn:
            # the views are today's: they read the graph written at 0005 from any search_path
            conn.execute("SET search_path = public")
            relations = conn.execute(
                "SELECT tenant_id, source, relation, target, epistemic FROM graph_relations"
            ).fetchall()
            jobs = conn.execute("SELECT kind FROM jobs ORDER BY id").fetchall()
    assert_same_schema(fresh, upgraded, f"a database upgraded from {EARLY} with rows")
    if with_graph:
        assert relations == [("acme", "Lisbon", "depends_on", "Portugal", "assertion")]
    # 0007 queues the passage backfill, 0020 the entity links' backfill
    assert jobs == [("extract_facts",), ("embed_memories",), ("link_entities",)]


def test_migrating_again_at_head_changes_nothing(
    pg_server: EmbeddedPostgres, database: Opener, fresh: str
) -> None:
    with database("twice") as db:
        db.migrate()
        db.migrate()
        twice = schema_dump(pg_server, db.settings.embedded.database)
    assert_same_schema(fresh, twice, "a database migrated twice")


def test_downgrade_to_base_leaves_nothing_and_upgrading_again_gives_the_fresh_schema(
    pg_server: EmbeddedPostgres, database: Opener, fresh: str
) -> None:
    with database("never_migrated") as empty_db:
        empty = schema_dump(pg_server, empty_db.settings.embedded.database)
    with database("redone") as db:
        name = db.settings.embedded.database
        db.migrate()
        db.downgrade("base")
        base = schema_dump(pg_server, name)
        db.migrate()
        redone = schema_dump(pg_server, name)
    # Left behind on purpose: alembic's (empty) version table, and the schema ag_catalog,
    # which CREATE EXTENSION age made and DROP EXTENSION does not remove.
    kept = ("alembic_version", "SCHEMA ag_catalog")
    leftovers = "\n\n".join(
        block for block in base.split("\n\n") if not any(mark in block for mark in kept)
    )
    assert_same_schema(
        empty.strip(), leftovers.strip(), "a database downgraded to base", "a new database"
    )
    assert_same_schema(fresh, redone, "a database downgraded to base and upgraded again")


def test_0005_alone_creates_what_it_created_when_written_and_head_has_todays_objects(
    database: Opener,
) -> None:
    query = "SELECT prosrc, proconfig FROM pg_proc WHERE oid = 'elephant_graph_relations'::regproc"
    with database("frozen") as db:
        db.migrate("0005_graph")
        with psycopg.connect(db.admin_conninfo()) as conn:
            frozen = conn.execute(query).fetchone()
            comment = conn.execute("SELECT obj_description('memories'::regclass)").fetchone()
        db.migrate()
        with psycopg.connect(db.admin_conninfo()) as conn:
            today = conn.execute(query).fetchone()
    assert frozen is not None and today is not None
    assert "s.id = r.start_id" in frozen[0] and frozen[1] is None, "0005 as written"
    assert comment == (None,), "comments are objects of head, not of 0005"
    assert "s.id OPERATOR(ag_catalog.=) r.start_id" in today[0]
    assert today[1] == ["search_path=pg_catalog, public"]


def test_objects_are_put_back_by_a_migrate_at_head(
    database: Opener,
) -> None:
    """A view or comment changed by hand (or by an older release of the code) is today's
    again after the next `elephant migrate`, with nothing left to migrate."""
    with database("drifted") as db:
        db.migrate()
        run(db, "COMMENT ON COLUMN memories.text IS NULL")
        run(
            db,
            "CREATE OR REPLACE VIEW current_facts WITH (security_invoker = true) AS "
            "SELECT * FROM (SELECT f.tenant_id, f.id, f.text, f.subject, f.fact_type, "
            "f.observation_kind, f.source, f.valid_from, f.valid_to, f.recorded_at, "
            "f.importance, f.confidence, '{}'::text[] AS entity_keys FROM facts AS f) AS s",
        )
        db.migrate()
        with psycopg.connect(db.admin_conninfo()) as conn:
            text_comment = conn.execute(
                "SELECT col_description('memories'::regclass, "
                "(SELECT attnum FROM pg_attribute WHERE attrelid = 'memories'::regclass "
                "AND attname = 'text'))"
            ).fetchone()
            view = conn.execute("SELECT pg_get_viewdef('current_facts'::regclass)").fetchone()
    assert text_comment is not None and text_comment[0], "the column comment is back"
    assert view is not None and "fact_entities" in view[0], "current_facts is today's again"


MIGRATE_REPEATEDLY = """
import json, sys
from app.config import Settings
from app.db import Database

db = Database(Settings.model_validate(json.loads(sys.argv[1])))
db.start_server()
try:
    for _ in range(int(sys.argv[2])):
        db.migrate()
finally:
    db.close()
"""


def test_processes_starting_together_migrate_one_after_the_other(
    pg_data_dir: Path, database: Opener
) -> None:
    """Re-applying CREATE OR REPLACE FUNCTION in two transactions at once fails ("tuple
    concurrently updated"); the migration's advisory lock orders them. (Processes, not
    threads: alembic's ``context`` and ``op`` are module globals.)"""
    with database("concurrent") as db:
        db.migrate()
        settings = json.dumps(
            {
                "data_dir": str(pg_data_dir),
                "embedded": {"database": db.settings.embedded.database},
                "database": {"optional_extensions": list(db.settings.database.optional_extensions)},
            }
        )
        processes = [
            subprocess.Popen(
                [sys.executable, "-c", MIGRATE_REPEATEDLY, settings, "8"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(3)
        ]
        outcomes = [process.communicate(timeout=240) for process in processes]
    failures = [
        "\n".join(stderr.strip().splitlines()[-3:]) or f"exit {process.returncode}"
        for process, (_, stderr) in zip(processes, outcomes, strict=True)
        if process.returncode != 0
    ]
    assert failures == [], f"concurrent migrations failed: {failures}"
