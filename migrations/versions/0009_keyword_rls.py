"""Keyword lane indexes under row-level security (placeholder).

Revision ID: 0009_keyword_rls
Revises: 0008_relational_graph
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0009_keyword_rls"
down_revision = "0008_relational_graph"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("UPDATE elephant_meta SET schema_version = '0009_keyword_rls', updated_at = now()")


def downgrade() -> None:
    op.execute(
        "UPDATE elephant_meta SET schema_version = '0008_relational_graph', updated_at = now()"
    )
