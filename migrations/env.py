"""Alembic environment: run by `elephant migrate` (app.db.migrate), never by bare alembic.

The caller hands over an open SQLAlchemy connection and the parameters the schema
depends on (embedding dimension and model, app role) in ``config.attributes``.
"""

from __future__ import annotations

from alembic import context

connection = context.config.attributes.get("connection")
if connection is None:
    raise SystemExit("run migrations with `elephant migrate`, which supplies the connection")

context.configure(connection=connection, transaction_per_migration=False)
with context.begin_transaction():
    context.run_migrations()
