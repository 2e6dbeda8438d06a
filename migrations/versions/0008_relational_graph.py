"""Relational graph backend: entities and relations as ordinary tables (placeholder).

Revision ID: 0008_relational_graph
Revises: 0007_retrieval
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0008_relational_graph"
down_revision = "0007_retrieval"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "UPDATE elephant_meta SET schema_version = '0008_relational_graph', updated_at = now()"
    )


def downgrade() -> None:
    op.execute("UPDATE elephant_meta SET schema_version = '0007_retrieval', updated_at = now()")
