from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from app.db import Database
from app.db import migrate as migrations
from app.db.embedded import EmbeddedPostgres
from app.db.resources import object_files
from app.errors import SchemaMismatch
from tests.conftest import make_settings, needs_bm25

TABLES = {"tenants", "conversations", "turns", "memories", "facts", "elephant_meta"}


def tables(conninfo: str) -> set[str]:
    with psycopg.connect(conninfo) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
        ).fetchall()
    return {row[0] for row in rows}


def test_upgrade_downgrade_upgrade(
    pg_server: EmbeddedPostgres, pg_data_dir: Path, new_database: Callable[..., str]
) -> None:
    name = new_database("updown", empty=True)
    db = Database(make_settings(pg_data_dir, embedded={"database": name}))
    db.start_server()
    admin = db.admin_conninfo()
    assert migrations.current_revision(admin) is None

    db.migrate()
    assert tables(admin) >= TABLES
    assert migrations.current_revision(admin) == migrations.head_revision()

    db.downgrade("base")
    assert tables(admin) - {"alembic_version"} == set()
    with psycopg.connect(admin) as conn:
        extensions = {r[0] for r in conn.execute("SELECT extname FROM pg_extension").fetchall()}
    assert "vector" not in extensions

    db.migrate()
    assert tables(admin) >= TABLES
    with psycopg.connect(admin) as conn:
        meta = conn.execute(
            "SELECT embedding_model, embedding_dim, schema_version FROM elephant_meta"
        ).fetchone()
    assert meta == ("all-MiniLM-L6-v2", 384, migrations.head_revision())
    db.close()


def test_indexes_exist_for_every_lane(db: Database) -> None:
    with db.admin_connection() as conn:
        rows = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'"
        ).fetchall()
    defs = dict(rows)
    for table in ("memories", "facts"):
        assert "USING hnsw (embedding vector_cosine_ops)" in defs[f"{table}_embedding_hnsw"]
        assert "USING gin (tsv)" in defs[f"{table}_tsv_gin"]


@needs_bm25
def test_bm25_indexes_exist_with_pg_textsearch(db: Database) -> None:
    with db.admin_connection() as conn:
        rows = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'"
        ).fetchall()
    defs = dict(rows)
    for table in ("memories", "facts"):
        assert "USING bm25" in defs[f"{table}_text_bm25"]


def test_embedding_column_has_the_configured_dimension(db: Database) -> None:
    with db.admin_connection() as conn:
        row = conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'memories'::regclass AND attname = 'embedding'"
        ).fetchone()
    assert row == ("vector(384)",)


def test_a_different_dimension_is_refused_at_start(
    pg_server: EmbeddedPostgres, pg_data_dir: Path, new_database: Callable[..., str]
) -> None:
    name = new_database("dim_mismatch")
    db = Database(make_settings(pg_data_dir, embedded={"database": name}, embedding={"dim": 768}))
    with pytest.raises(SchemaMismatch, match="384-d .* embedding.dim is 768"):
        db.open()
    db.close()


def test_unmigrated_database_without_auto_migrate_says_what_to_run(
    pg_server: EmbeddedPostgres, pg_data_dir: Path, new_database: Callable[..., str]
) -> None:
    name = new_database("no_auto", empty=True)
    settings = make_settings(
        pg_data_dir, embedded={"database": name}, database={"auto_migrate": False}
    )
    db = Database(settings)
    with pytest.raises(SchemaMismatch, match="elephant migrate"):
        db.open()
    db.close()


def test_every_python_package_is_listed_for_the_wheel() -> None:
    """pyproject lists packages explicitly (for the migrations/sql mapping): keep it whole."""
    import tomllib

    root = Path(__file__).resolve().parents[2]
    listed = set(
        tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(path.parent.relative_to(root).parts)
        for path in (root / "app").rglob("__init__.py")
    }
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"


# ------------------------------------------------------------------ frozen migrations

VERSIONS = Path(__file__).resolve().parents[2] / "migrations" / "versions"
# What a migration may not import: code or files that change after it is released.
MUTABLE_MODULES = {"app", "sql", "migrations", "importlib", "pathlib", "pkgutil"}
READERS = {"open", "read_text", "read_bytes", "load_sql", "load_statement", "fragment", "splice"}


def _migration_files() -> list[Path]:
    files = sorted(VERSIONS.glob("[0-9]*.py"))
    assert len(files) >= 9, f"no migrations found in {VERSIONS}"
    return files


def test_migrations_read_no_files_and_import_no_app_code() -> None:
    """A migration must create the same objects whenever it runs: everything it executes
    is in its own text (migrations/README.md), never a file or app code that changes."""
    problems = []
    for path in _migration_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                names = []
            problems += [
                f"{path.name}:{node.lineno} imports {name}"
                for name in names
                if name.split(".")[0] in MUTABLE_MODULES
            ]
            if isinstance(node, ast.Call):
                func = node.func
                called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if called in READERS:
                    problems.append(f"{path.name}:{node.lineno} calls {called}()")
    assert problems == [], "migrations must be self-contained:\n" + "\n".join(problems)


def test_0005_creates_the_views_as_they_were_when_it_was_written() -> None:
    """0005 once loaded sql/graph_views.sql, which changed after it; its text is that file
    at commit 74418d9, byte for byte (git blob 9180c52)."""
    tree = ast.parse((VERSIONS / "0005_graph.py").read_text())
    [text] = [
        node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "GRAPH_VIEWS" for t in node.targets)
        and isinstance(node.value, ast.Constant)
    ]
    data = text.encode()
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
    assert blob == "9180c5217d10ff9f4c4177bb62789f25dc950933"


def test_re_applied_objects_are_ordered_idempotent_sql() -> None:
    """sql/objects/ is re-run at every upgrade: only CREATE OR REPLACE and COMMENT there
    (a bare CREATE fails the second time; DROP would lose grants and dependent views)."""
    files = object_files()
    assert [path.name for path in files] == sorted(path.name for path in files)
    assert files[-1].name.endswith("comments.sql"), "comments last: they need every object"
    statement = re.compile(r"^(CREATE|DROP|ALTER|GRANT|REVOKE|COMMENT)\b[^\n]*", re.MULTILINE)
    for path in files:
        for match in statement.finditer(path.read_text()):
            line = match.group(0)
            assert line.startswith(("CREATE OR REPLACE ", "COMMENT ON ")), f"{path.name}: {line}"


def test_every_sql_file_ships_in_the_wheel() -> None:
    """pyproject's package-data globs for app.sql match every SQL file under sql/, also
    sql/objects/ (without them an installed package would keep 0005's views)."""
    import tomllib

    root = Path(__file__).resolve().parents[2]
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["app.sql"]
    shipped = {path for pattern in patterns for path in (root / "sql").glob(pattern)}
    missing = sorted(
        str(path.relative_to(root)) for path in (root / "sql").rglob("*.sql") if path not in shipped
    )
    assert missing == [], f'add to [tool.setuptools.package-data] "app.sql": {missing}'
