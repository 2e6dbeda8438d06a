"""Read path: fact source and access stats, so every search filter and counter covers facts.

Revision ID: 0003_read_path
Revises: 0002_write_path
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision = "0003_read_path"
down_revision = "0002_write_path"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE facts ADD COLUMN source text")
    op.execute(
        "UPDATE facts AS f SET source = m.source FROM memories AS m WHERE m.id = f.memory_id"
    )
    op.execute("ALTER TABLE facts ADD COLUMN access_count integer NOT NULL DEFAULT 0")
    op.execute("ALTER TABLE facts ADD COLUMN last_accessed_at timestamptz")
    op.execute("CREATE INDEX facts_tenant_created ON facts (tenant_id, created_at DESC)")
    op.execute("UPDATE elephant_meta SET schema_version = '0003_read_path', updated_at = now()")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS facts_tenant_created")
    op.execute("ALTER TABLE facts DROP COLUMN IF EXISTS last_accessed_at")
    op.execute("ALTER TABLE facts DROP COLUMN IF EXISTS access_count")
    op.execute("ALTER TABLE facts DROP COLUMN IF EXISTS source")
    op.execute("UPDATE elephant_meta SET schema_version = '0002_write_path', updated_at = now()")
