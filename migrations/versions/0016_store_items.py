"""Keyed items: a note can be the current version of an item (namespace, key), as a
key-value store of agent memories (LangGraph's BaseStore, app/services/store) needs.

- `memories.item_namespace`, `item_key`, `item_value`: the item a note holds (its
  namespace's labels joined by '.', its key, its JSON value); all three or none.
- `memories.item_created_at`: when the item was first put (a later version keeps it).
- `memories.superseded_at`, `superseded_by`: a version replaced by a newer put (by
  its id) or deleted (no successor). Search skips superseded notes; the history stays.
- One current version per item: a unique index over the current versions.
- The tsvector keyword lane's functions (migration 0009) return the columns the new
  filters read: `elephant_keyword_memories` the item and supersede columns,
  `elephant_keyword_facts` the fact's memory_id; their role may read those columns.

Revision ID: 0016_store_items
Revises: 0015_analysts
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision = "0016_store_items"
down_revision = "0015_analysts"
branch_labels = None
depends_on = None


TENANT_SETTING = "elephant.tenant_id"
NEW_MEMORY_COLUMNS = ("superseded_at", "item_namespace", "item_key", "item_value")
FUNCTIONS = ("elephant_keyword_memories(text)", "elephant_keyword_facts(text)")

# (returned columns, their select list) of each keyword function: before and after.
MEMORY_RETURNS = (
    "id uuid, score real, kind text, source text, created_at timestamptz, event_at timestamptz",
    "m.id, ts_rank_cd(m.tsv, websearch_to_tsquery('english', p_query)), m.kind, m.source, "
    "m.created_at, m.event_at",
)
MEMORY_RETURNS_NOW = (
    MEMORY_RETURNS[0] + ", superseded_at timestamptz, item_namespace text, item_key text, "
    "item_value jsonb",
    MEMORY_RETURNS[1] + ", m.superseded_at, m.item_namespace, m.item_key, m.item_value",
)
FACT_RETURNS = (
    "id uuid, score real, source text, created_at timestamptz, valid_from timestamptz, "
    "valid_to timestamptz, status text, expired_at timestamptz",
    "f.id, ts_rank_cd(f.tsv, websearch_to_tsquery('english', p_query)), f.source, "
    "f.created_at, f.valid_from, f.valid_to, f.status, f.expired_at",
)
FACT_RETURNS_NOW = (FACT_RETURNS[0] + ", memory_id uuid", FACT_RETURNS[1] + ", f.memory_id")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _keyword_functions(memories: tuple[str, str], facts: tuple[str, str]) -> None:
    """(Re)create the keyword lane's functions as migration 0009 does, with these columns."""
    app_role = str(context.config.attributes["app_role"])
    app, role = _quote(app_role), _quote(f"{app_role[:55]}_keyword")
    setting = f"current_setting('{TENANT_SETTING}', true)"
    for function in FUNCTIONS:
        op.execute(f"DROP FUNCTION IF EXISTS {function}")
    for function, alias, table, (returns, columns) in (
        ("elephant_keyword_memories", "m", "memories", memories),
        ("elephant_keyword_facts", "f", "facts", facts),
    ):
        op.execute(
            f"""
            CREATE FUNCTION {function}(p_query text)
            RETURNS TABLE ({returns})
            LANGUAGE plpgsql STABLE SECURITY DEFINER
            SET search_path = pg_catalog, public SET plan_cache_mode = force_custom_plan AS $$
            DECLARE
                v_tenant text := {setting};
            BEGIN
                RETURN QUERY
                SELECT {columns}
                  FROM {table} AS {alias}
                 WHERE {alias}.tenant_id = v_tenant
                   AND {alias}.tsv @@ websearch_to_tsquery('english', p_query);
            END
            $$
            """
        )
        signature = f"{function}(text)"
        bind = op.get_bind()
        lend = not bind.execute(
            sa.text("SELECT has_schema_privilege(:r, 'public', 'CREATE')"),
            {"r": f"{app_role[:55]}_keyword"},
        ).scalar()
        if lend:
            op.execute(f"GRANT CREATE ON SCHEMA public TO {role}")
        op.execute(f"ALTER FUNCTION {signature} OWNER TO {role}")
        if lend:
            op.execute(f"REVOKE CREATE ON SCHEMA public FROM {role}")
        op.execute(f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC")
        op.execute(f"GRANT EXECUTE ON FUNCTION {signature} TO {app}")
        op.execute(
            f"COMMENT ON FUNCTION {signature} IS 'The keyword lane without pg_textsearch: the "
            f"{table} of the tenant in {TENANT_SETTING} that match websearch_to_tsquery(english, "
            "query), with their ts_rank_cd score and the columns the lane filters by. Owned by "
            "the keyword role, to which no policy applies before @@, so the GIN index on tsv is "
            "used under row-level security (migrations 0009, 0016).'"
        )


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
    role = _quote(f"{str(context.config.attributes['app_role'])[:55]}_keyword")
    op.execute(f"GRANT SELECT ({', '.join(NEW_MEMORY_COLUMNS)}) ON memories TO {role}")
    op.execute(f"GRANT SELECT (memory_id) ON facts TO {role}")
    _keyword_functions(MEMORY_RETURNS_NOW, FACT_RETURNS_NOW)
    op.execute("UPDATE elephant_meta SET schema_version = '0016_store_items', updated_at = now()")


def downgrade() -> None:
    op.execute("UPDATE elephant_meta SET schema_version = '0015_analysts', updated_at = now()")
    _keyword_functions(MEMORY_RETURNS, FACT_RETURNS)
    role = _quote(f"{str(context.config.attributes['app_role'])[:55]}_keyword")
    op.execute(f"REVOKE SELECT (memory_id) ON facts FROM {role}")
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
