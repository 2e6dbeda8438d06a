from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from app.db import Database
from app.db import migrate as migrations
from app.db.embedded import EmbeddedPostgres
from app.errors import SchemaMismatch
from tests.conftest import make_settings

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

    root = Path(__file__).resolve().parents[1]
    listed = set(
        tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(path.parent.relative_to(root).parts)
        for path in (root / "app").rglob("__init__.py")
    }
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"
