"""Sessions: handoffs written when an agent closes a session, read by the next one.

Revision ID: 0004_sessions
Revises: 0003_read_path
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import context, op

revision = "0004_sessions"
down_revision = "0003_read_path"
branch_labels = None
depends_on = None

TENANT_SETTING = "elephant.tenant_id"


def _role() -> str:
    return '"' + str(context.config.attributes["app_role"]).replace('"', '""') + '"'


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE handoffs (
            id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            tenant_id       text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            project         text NOT NULL CHECK (length(project) BETWEEN 1 AND 200),
            conversation_id uuid REFERENCES conversations (id) ON DELETE SET NULL,
            summary         text NOT NULL,
            decisions       jsonb NOT NULL DEFAULT '[]'::jsonb,
            open_questions  jsonb NOT NULL DEFAULT '[]'::jsonb,
            next_steps      jsonb NOT NULL DEFAULT '[]'::jsonb,
            generator       text NOT NULL,
            metadata        jsonb NOT NULL DEFAULT '{}'::jsonb,
            created_at      timestamptz NOT NULL DEFAULT now()
        )
        """
    )
    op.execute("CREATE INDEX handoffs_latest ON handoffs (tenant_id, project, created_at DESC)")
    setting = f"current_setting('{TENANT_SETTING}', true)"
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON handoffs TO {_role()}")
    op.execute("ALTER TABLE handoffs ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE handoffs FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON handoffs "
        f"USING (tenant_id = {setting}) WITH CHECK (tenant_id = {setting})"
    )
    op.execute("UPDATE elephant_meta SET schema_version = '0004_sessions', updated_at = now()")


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS handoffs")
    op.execute("UPDATE elephant_meta SET schema_version = '0003_read_path', updated_at = now()")
