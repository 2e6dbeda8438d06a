"""Schema migrations through alembic, driven from code (``elephant migrate``).

The schema depends on settings (embedding dimension and model, the roles, the
optional extensions to create), so those travel to the migration scripts in
``Config.attributes``.

alembic and SQLAlchemy (~0.35 s to import) are imported when a migration runs or the
head is asked for, not with the database runtime: a server imports this module on its
way to opening the database, and `elephant serve` opens it in the background.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psycopg

from app.db import lock_waits
from app.db.resources import migrations_dir, object_files
from app.errors import DatabaseUnavailable

if TYPE_CHECKING:
    import sqlalchemy as sa
    from alembic.config import Config

# Bounds of a migration's waits: for the migration's advisory lock (another process
# migrating, or an outside session holding the key), and for each DDL statement's table
# lock (lock_timeout). Past either, the start fails naming the sessions that hold it.
MIGRATION_LOCK_WAIT_S = 60.0
MIGRATION_LOCK_TIMEOUT_MS = 10000
# alembic_version's comment records which sql/objects/ the database has (env.py).
OBJECTS_MARK = "elephant sql/objects sha256 "

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
    """Run alembic; a table lock it could not take in time (lock_timeout) becomes a
    DatabaseUnavailable naming the sessions holding table locks (read after the
    migration's transaction rolled back)."""
    import sqlalchemy as sa

    try:
        _alembic(conninfo, params, action, target)
    except (psycopg.errors.LockNotAvailable, sa.exc.OperationalError) as exc:
        cause = getattr(exc, "orig", exc)
        if not isinstance(cause, psycopg.errors.LockNotAvailable):
            raise
        with psycopg.connect(conninfo, autocommit=True) as conn:
            holders = lock_waits.relation_holders(conn)
        raise DatabaseUnavailable(
            f"the schema migration could not lock a table within "
            f"{MIGRATION_LOCK_TIMEOUT_MS} ms and changed nothing: {lock_waits.advice(holders)}",
            retry_after_s=lock_waits.RETRY_AFTER_S,
        ) from exc


def _alembic(conninfo: str, params: SchemaParams, action: str, target: str) -> None:
    from alembic import command

    config = _alembic_config()
    with _ALEMBIC, _engine(conninfo) as engine, engine.begin() as connection:
        config.attributes.update(
            connection=connection,
            lock_wait_s=MIGRATION_LOCK_WAIT_S,
            lock_timeout_ms=MIGRATION_LOCK_TIMEOUT_MS,
            objects_mark=objects_mark(),
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


def upgrade(
    conninfo: str, params: SchemaParams, target: str = "head", *, if_needed: bool = False
) -> None:
    """Upgrade in one transaction: a failing migration leaves the schema as it was.

    ``if_needed`` (a server's start): first read, without any lock, whether the database
    is at head with this build's sql/objects/; then there is nothing to do, and no lock
    an outside session could hold is waited for."""
    if if_needed and target == "head" and is_current(conninfo):
        return
    _run(conninfo, params, "upgrade", target)


def objects_mark() -> str:
    """The comment env.py leaves on alembic_version once sql/objects/ is applied: a
    digest of the files' names and text, so a start knows whether they changed."""
    digest = hashlib.sha256()
    for path in object_files():
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return OBJECTS_MARK + digest.hexdigest()


def is_current(conninfo: str) -> bool:
    """At head, with this build's objects: plain catalog reads, bounded by lock_timeout."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("SELECT set_config('lock_timeout', %s, false)", ("2s",))
        row = conn.execute(
            "SELECT to_regclass('public.alembic_version'), "
            "obj_description(to_regclass('public.alembic_version'), 'pg_class')"
        ).fetchone()
        if row is None or row[0] is None or row[1] != objects_mark():
            return False
        versions = conn.execute("SELECT version_num FROM public.alembic_version").fetchall()
    return [str(v[0]) for v in versions] == [head_revision()]


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
