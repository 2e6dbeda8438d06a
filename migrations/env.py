"""Alembic environment: run by `elephant migrate` (app.db.migrate), never by bare alembic.

The caller hands over an open SQLAlchemy connection and the parameters the schema
depends on (embedding dimension and model, app role) in ``config.attributes``.

Everything runs in the caller's one transaction:
1. an advisory lock, so two processes that start at once migrate one after the other
   (concurrent ``CREATE OR REPLACE FUNCTION`` fails with "tuple concurrently updated");
2. the migrations (frozen: each creates what it created when it was written);
3. at head (also when nothing was left to migrate), the re-applied objects of
   ``sql/objects/`` in file-name order: the current definition of views, functions
   and comments. Not after a downgrade or an upgrade to an older revision, whose schema
   is exactly what its migrations made. See migrations/README.md.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context

from app.db.resources import object_files

# pg_advisory_xact_lock key of `elephant migrate` (per database; any fixed number would
# do: this one is "elephant" in ASCII).
MIGRATION_LOCK = 0x656C657068616E74


def apply_objects(connection: sa.Connection) -> None:
    """Run every ``sql/objects/*.sql`` file as it is: through the driver, so ``%`` and
    ``:name`` in the SQL are not taken for parameters."""
    driver = connection.connection.driver_connection
    if driver is None:
        raise RuntimeError("the migration connection is closed")
    for path in object_files():
        try:
            driver.execute(path.read_text())
        except Exception as exc:
            exc.add_note(f"while re-applying sql/objects/{path.name} (see migrations/README.md)")
            raise


connection = context.config.attributes.get("connection")
if connection is None:
    raise SystemExit("run migrations with `elephant migrate`, which supplies the connection")

context.configure(connection=connection, transaction_per_migration=False)
with context.begin_transaction():
    connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
    context.run_migrations()
    at_head = set(context.get_context().get_current_heads()) == set(
        context.get_head_revisions() or ()
    )
    if at_head:
        apply_objects(connection)
