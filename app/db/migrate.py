"""Schema migrations through alembic, driven from code (``elephant migrate``).

The schema depends on settings (embedding dimension and model, the roles, the
optional extensions to create), so those travel to the migration scripts in
``Config.attributes``.

alembic and SQLAlchemy (~0.35 s to import) are imported when a migration runs or the
head is asked for, not with the database runtime: a server imports this module on its
way to opening the database, and `elephant serve` opens it in the background.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psycopg

from app.db.resources import migrations_dir

if TYPE_CHECKING:
    import sqlalchemy as sa
    from alembic.config import Config

# What the migrations create besides pgvector when the server has them; the same default
# as database.optional_extensions, so a caller that does not say keeps today's schema.
DEFAULT_OPTIONAL_EXTENSIONS = ("age", "pg_textsearch")


@dataclass(frozen=True)
class SchemaParams:
    embedding_dim: int
    embedding_model: str
    app_role: str
    worker_role: str = "elephant_worker"
    # () is the managed-Postgres mode: pgvector only, as on RDS, Cloud SQL, Supabase, Neon.
    optional_extensions: tuple[str, ...] = DEFAULT_OPTIONAL_EXTENSIONS


def _alembic_config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    return config


@contextmanager
def _engine(conninfo: str) -> Iterator[sa.Engine]:
    import sqlalchemy as sa

    engine = sa.create_engine(
        "postgresql+psycopg://",
        creator=lambda: psycopg.connect(conninfo),
        poolclass=sa.pool.NullPool,
    )
    try:
        yield engine
    finally:
        engine.dispose()


# alembic's `context` and `op` are module-level proxies: two migrations at once in one
# process (two databases opened from two threads) would tear each other's down.
_ALEMBIC = threading.Lock()


def _run(conninfo: str, params: SchemaParams, action: str, target: str) -> None:
    from alembic import command

    config = _alembic_config()
    with _ALEMBIC, _engine(conninfo) as engine, engine.begin() as connection:
        config.attributes.update(
            connection=connection,
            embedding_dim=params.embedding_dim,
            embedding_model=params.embedding_model,
            app_role=params.app_role,
            worker_role=params.worker_role,
            optional_extensions=tuple(params.optional_extensions),
        )
        if action == "upgrade":
            command.upgrade(config, target)
        else:
            command.downgrade(config, target)


def upgrade(conninfo: str, params: SchemaParams, target: str = "head") -> None:
    """Upgrade in one transaction: a failing migration leaves the schema as it was."""
    _run(conninfo, params, "upgrade", target)


def downgrade(conninfo: str, params: SchemaParams, target: str = "base") -> None:
    _run(conninfo, params, "downgrade", target)


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(_alembic_config()).get_current_head()
    assert head is not None, "no migrations found"
    return head


def current_revision(conninfo: str) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with _engine(conninfo) as engine, engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()
