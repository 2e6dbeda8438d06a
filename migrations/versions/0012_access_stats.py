"""Access statistics aside: a search no longer rewrites the rows it returns.

- `access_stats`: how often search (or a fetch by id, or helpful feedback) used a memory
  or fact and when it last did, one narrow row per tenant and item. It replaces the
  columns `access_count` and `last_accessed_at` of `memories` and `facts`: updating those
  re-inserted the wide row into every index that covers it (HNSW, BM25, GIN), so results
  drifted and indexes bloated with every search. The API aggregates uses in memory and
  upserts them here in batches (app/services/retrieval/access_stats.py).
- Deleting memories or facts deletes their statistics (a statement trigger each);
  deleting a tenant cascades.
- Today's counts move into the table; the downgrade moves them back.

Revision ID: 0012_access_stats
Revises: 0011_console
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import context, op

revision = "0012_access_stats"
down_revision = "0011_console"
branch_labels = None
depends_on = None

TENANT_SETTING = "elephant.tenant_id"
KINDS = {"memories": "memory", "facts": "fact"}


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def upgrade() -> None:
    app = _quote(str(context.config.attributes["app_role"]))
    # fillfactor 70: an upsert that only moves the counters stays on its page (HOT) and
    # leaves the primary key alone.
    op.execute(
        """
        CREATE TABLE access_stats (
            tenant_id        text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            item_id          uuid NOT NULL,
            item_kind        text NOT NULL CHECK (item_kind IN ('memory', 'fact')),
            access_count     integer NOT NULL DEFAULT 0 CHECK (access_count >= 0),
            last_accessed_at timestamptz,
            PRIMARY KEY (tenant_id, item_id)
        ) WITH (fillfactor = 70)
        """
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON access_stats TO {app}")
    op.execute("ALTER TABLE access_stats ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE access_stats FORCE ROW LEVEL SECURITY")
    setting = f"current_setting('{TENANT_SETTING}', true)"
    op.execute(
        "CREATE POLICY tenant_isolation ON access_stats "
        f"USING (tenant_id = {setting}) WITH CHECK (tenant_id = {setting})"
    )
    for column, text in (
        ("", "How often each memory or fact was used (returned by search, fetched by id, "
             "called helpful) and when last: one narrow row per tenant and item, kept out of "
             "memories and facts so a read never rewrites what search indexes. Written in "
             "batches by the API (migration 0012)."),
        (".tenant_id", "Tenant of the memory or fact."),
        (".item_id", "memories.id or facts.id."),
        (".item_kind", "memory or fact: which table item_id is in."),
        (".access_count", "How often it was used; refreshes its activation."),
        (".last_accessed_at", "When it was last used (as of the last batch written)."),
    ):  # fmt: skip
        target = "TABLE access_stats" if not column else f"COLUMN access_stats{column}"
        op.execute(f"COMMENT ON {target} IS '{text}'")

    # Statement triggers: one DELETE per erasure, not one per row.
    op.execute(
        """
        CREATE FUNCTION elephant_forget_access() RETURNS trigger
        LANGUAGE plpgsql
        SET search_path = pg_catalog, public AS $$
        BEGIN
            DELETE FROM access_stats AS a USING gone AS g WHERE a.item_id = g.id;
            RETURN NULL;
        END
        $$
        """
    )
    op.execute(
        "COMMENT ON FUNCTION elephant_forget_access() IS 'Trigger: deleting memories or "
        "facts deletes their access_stats rows (migration 0012).'"
    )
    for table in KINDS:
        op.execute(
            f"CREATE TRIGGER {table}_forget_access AFTER DELETE ON {table} "
            "REFERENCING OLD TABLE AS gone FOR EACH STATEMENT "
            "EXECUTE FUNCTION elephant_forget_access()"
        )

    for table, kind in KINDS.items():
        op.execute(
            "INSERT INTO access_stats (tenant_id, item_id, item_kind, access_count, "
            f"last_accessed_at) SELECT tenant_id, id, '{kind}', access_count, last_accessed_at "
            f"FROM {table} WHERE access_count > 0 OR last_accessed_at IS NOT NULL"
        )
        op.execute(f"ALTER TABLE {table} DROP COLUMN access_count")
        op.execute(f"ALTER TABLE {table} DROP COLUMN last_accessed_at")
    op.execute("UPDATE elephant_meta SET schema_version = '0012_access_stats', updated_at = now()")


def downgrade() -> None:
    for table, kind in KINDS.items():
        op.execute(f"DROP TRIGGER {table}_forget_access ON {table}")
        op.execute(f"ALTER TABLE {table} ADD COLUMN access_count integer NOT NULL DEFAULT 0")
        op.execute(f"ALTER TABLE {table} ADD COLUMN last_accessed_at timestamptz")
        op.execute(
            f"UPDATE {table} AS t SET access_count = a.access_count, "
            "last_accessed_at = a.last_accessed_at FROM access_stats AS a "
            f"WHERE a.item_id = t.id AND a.item_kind = '{kind}'"
        )
    op.execute("DROP FUNCTION elephant_forget_access()")
    op.execute("DROP TABLE access_stats")
    op.execute("UPDATE elephant_meta SET schema_version = '0011_console', updated_at = now()")
