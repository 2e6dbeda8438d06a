"""Alembic environment: run by `elephant migrate` (app.db.migrate), never by bare alembic.

The caller hands over an open SQLAlchemy connection and the parameters the schema
depends on (embedding dimension and model, app role) in ``config.attributes``.

Everything runs in the caller's one transaction, whose lock waits are bounded
(``lock_timeout_ms``: a DDL statement that cannot lock its table in time fails, naming
the sessions that hold table locks):
1. an advisory lock, so two processes that start at once migrate one after the other
   (concurrent ``CREATE OR REPLACE FUNCTION`` fails with "tuple concurrently updated"),
   tried for at most ``lock_wait_s``, then an error naming who holds it;
2. the migrations (frozen: each creates what it created when it was written);
3. at head (also when nothing was left to migrate), the re-applied objects of
   ``sql/objects/`` in file-name order: the current definition of views, functions
   and comments. Not after a downgrade or an upgrade to an older revision, whose schema
   is exactly what its migrations made. Then a comment on alembic_version records a
   digest of those files (``objects_mark``): a server's start that finds the database at
   head with the same digest skips all of this, lock included (app/db/migrate.py).
See migrations/README.md.
"""

from __future__ import annotations

from typing import Any

import psycopg
import sqlalchemy as sa
from alembic import context
from psycopg import sql

from app.db import lock_waits
from app.db.resources import object_files

# pg_advisory_xact_lock key of `elephant migrate` (per database; any fixed number would
# do: this one is "elephant" in ASCII).
MIGRATION_LOCK = 0x656C657068616E74


def _driver(connection: sa.Connection) -> psycopg.Connection[Any]:
    driver = connection.connection.driver_connection
    if driver is None:
        raise RuntimeError("the migration connection is closed")
    return driver  # type: ignore[no-any-return]


def apply_objects(connection: sa.Connection, mark: str | None = None) -> None:
    """Run every ``sql/objects/*.sql`` file as it is: through the driver, so ``%`` and
    ``:name`` in the SQL are not taken for parameters. Then record ``mark``."""
    driver = _driver(connection)
    for path in object_files():
        try:
            driver.execute(path.read_text())
        except Exception as exc:
            exc.add_note(f"while re-applying sql/objects/{path.name} (see migrations/README.md)")
            raise
    if mark is not None:
        driver.execute(sql.SQL("COMMENT ON TABLE alembic_version IS {}").format(sql.Literal(mark)))


def _migrate(connection: sa.Connection) -> None:
    """Lock (bounded), migrate, re-apply the objects at head. A DDL statement's lock wait
    ends in lock_timeout (app/db/migrate.py names the sessions holding table locks)."""
    attributes = context.config.attributes
    driver = _driver(connection)
    lock_waits.bound(driver, attributes.get("lock_timeout_ms", 10000))
    lock_waits.take_advisory(
        driver, MIGRATION_LOCK, attributes.get("lock_wait_s", 60.0), "the schema migration"
    )
    context.run_migrations()
    at_head = set(context.get_context().get_current_heads()) == set(
        context.get_head_revisions() or ()
    )
    if at_head:
        apply_objects(connection, attributes.get("objects_mark"))
    else:  # below head: no re-applied objects, and no digest that would say there were
        _driver(connection).execute("COMMENT ON TABLE alembic_version IS NULL")


connection = context.config.attributes.get("connection")
if connection is None:
    raise SystemExit("run migrations with `elephant migrate`, which supplies the connection")

context.configure(connection=connection, transaction_per_migration=False)
with context.begin_transaction():
    _migrate(connection)
