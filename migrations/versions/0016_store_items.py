"""Keyed items: a note can be the current version of an item (namespace, key), as a
key-value store of agent memories (LangGraph's BaseStore, app/services/store) needs.

- `memories.item_namespace`, `item_key`, `item_value`: the item a note holds (its
  namespace's labels joined by '.', its key, its JSON value); all three or none.
- `memories.item_created_at`: when the item was first put (a later version keeps it).
- `memories.superseded_at`, `superseded_by`: a version replaced by a newer put (by
  its id) or deleted (no successor). Search skips superseded notes; the history stays.
- One current version per item: a unique index over the current versions.

Revision ID: 0016_store_items
Revises: 0015_analysts
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

revision = "0016_store_items"
down_revision = "0015_analysts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        ALTER TABLE memories
            ADD COLUMN item_namespace  text,
            ADD COLUMN item_key        text,
            ADD COLUMN item_value      jsonb,
            ADD COLUMN item_created_at timestamptz,
            ADD COLUMN superseded_at   timestamptz,
            ADD COLUMN superseded_by   uuid REFERENCES memories (id) ON DELETE SET NULL,
            ADD CONSTRAINT memories_item_whole CHECK (
                (item_key IS NULL) = (item_namespace IS NULL)
                AND (item_key IS NULL) = (item_value IS NULL)
                AND (item_key IS NULL) = (item_created_at IS NULL)),
            ADD CONSTRAINT memories_superseded_whole CHECK (
                superseded_by IS NULL OR superseded_at IS NOT NULL)
        """
    )
    op.execute(
        "CREATE UNIQUE INDEX memories_current_item ON memories "
        "(tenant_id, item_namespace, item_key) "
        "WHERE item_key IS NOT NULL AND superseded_at IS NULL"
    )
    op.execute(
        "CREATE INDEX memories_item_versions ON memories "
        "(tenant_id, item_namespace, item_key, created_at) WHERE item_key IS NOT NULL"
    )
    # their comments: sql/objects/90_comments.sql


def downgrade() -> None:
    op.execute("DROP INDEX memories_item_versions")
    op.execute("DROP INDEX memories_current_item")
    op.execute(
        """
        ALTER TABLE memories
            DROP CONSTRAINT memories_superseded_whole,
            DROP CONSTRAINT memories_item_whole,
            DROP COLUMN superseded_by,
            DROP COLUMN superseded_at,
            DROP COLUMN item_created_at,
            DROP COLUMN item_value,
            DROP COLUMN item_key,
            DROP COLUMN item_namespace
        """
    )
