"""Foundation: extensions, tenants, conversations, turns, memories, facts, meta, RLS.

Revision ID: 0001_foundation
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision = "0001_foundation"
down_revision = None
branch_labels = None
depends_on = None

TENANT_TABLES = ("conversations", "turns", "memories", "facts")
TENANT_SETTING = "elephant.tenant_id"


def _params() -> tuple[int, str, str]:
    attributes = context.config.attributes
    dim = int(attributes["embedding_dim"])
    if not 0 < dim <= 16000:
        raise ValueError(f"embedding dimension {dim} is out of range 1..16000")
    return dim, str(attributes["embedding_model"]), str(attributes["app_role"])


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _try(sql: str) -> bool:
    """Run optional DDL (an extension we may lack rights for) inside a savepoint."""
    bind = op.get_bind()
    try:
        with bind.begin_nested():
            bind.execute(sa.text(sql))
        return True
    except sa.exc.DBAPIError:
        return False


def _create_extensions() -> None:
    """pgvector, and the optional extensions the caller asks for (``optional_extensions``:
    database.optional_extensions; without the attribute both, as before it existed) when
    the server has them. None asked: the managed-Postgres mode (RDS, Cloud SQL, ...)."""
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    wanted = set(context.config.attributes.get("optional_extensions", ("age", "pg_textsearch")))
    if not wanted:
        return
    bind = op.get_bind()
    available = set(bind.execute(sa.text("SELECT name FROM pg_available_extensions")).scalars())
    # Through pg_settings: without pg_read_all_settings there is no row, not an error; then
    # pg_textsearch is tried (it refuses to be created unless preloaded).
    preloaded = bind.execute(
        sa.text("SELECT setting FROM pg_settings WHERE name = 'shared_preload_libraries'")
    ).scalar()
    if "age" in wanted and "age" in available:
        _try("CREATE EXTENSION IF NOT EXISTS age")
    if (
        "pg_textsearch" in wanted
        and "pg_textsearch" in available
        and (preloaded is None or "pg_textsearch" in str(preloaded))
    ):
        _try("CREATE EXTENSION IF NOT EXISTS pg_textsearch")


def _has_extension(name: str) -> bool:
    query = sa.text("SELECT 1 FROM pg_extension WHERE extname = :name")
    return op.get_bind().execute(query, {"name": name}).first() is not None


def upgrade() -> None:
    dim, model, role = _params()
    _create_extensions()

    op.execute(
        """
        CREATE TABLE elephant_meta (
            singleton       boolean PRIMARY KEY DEFAULT true CHECK (singleton),
            embedding_model text NOT NULL,
            embedding_dim   integer NOT NULL CHECK (embedding_dim > 0),
            schema_version  text NOT NULL,
            created_at      timestamptz NOT NULL DEFAULT now(),
            updated_at      timestamptz NOT NULL DEFAULT now()
        )
        """
    )
    op.get_bind().execute(
        sa.text(
            "INSERT INTO elephant_meta (embedding_model, embedding_dim, schema_version) "
            "VALUES (:model, :dim, :version)"
        ),
        {"model": model, "dim": dim, "version": revision},
    )

    op.execute(
        """
        CREATE TABLE tenants (
            id          text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
            name        text,
            settings    jsonb NOT NULL DEFAULT '{}'::jsonb,
            created_at  timestamptz NOT NULL DEFAULT now()
        )
        """
    )
    op.execute(
        """
        CREATE TABLE conversations (
            id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
            tenant_id    text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            external_id  text,
            source       text NOT NULL DEFAULT 'api',
            session_date timestamptz,
            metadata     jsonb NOT NULL DEFAULT '{}'::jsonb,
            created_at   timestamptz NOT NULL DEFAULT now(),
            UNIQUE (tenant_id, external_id)
        )
        """
    )
    op.execute(
        """
        CREATE TABLE turns (
            id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            tenant_id       text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            conversation_id uuid NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
            seq             integer NOT NULL CHECK (seq >= 0),
            speaker         text NOT NULL,
            text            text NOT NULL,
            occurred_at     timestamptz,
            source_turn_id  text,
            metadata        jsonb NOT NULL DEFAULT '{}'::jsonb,
            created_at      timestamptz NOT NULL DEFAULT now(),
            UNIQUE (conversation_id, seq)
        )
        """
    )
    op.execute("CREATE INDEX turns_tenant_source_turn ON turns (tenant_id, source_turn_id)")

    op.execute(
        f"""
        CREATE TABLE memories (
            id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
            tenant_id        text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            kind             text NOT NULL CHECK (kind IN ('note', 'window')),
            text             text NOT NULL CHECK (length(text) > 0),
            embedding        vector({dim}),
            tsv              tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED,
            source           text NOT NULL DEFAULT 'api',
            importance       real NOT NULL DEFAULT 50 CHECK (importance BETWEEN 0 AND 100),
            conversation_id  uuid REFERENCES conversations (id) ON DELETE SET NULL,
            turn_start       integer,
            turn_end         integer,
            source_turn_ids  text[] NOT NULL DEFAULT '{{}}',
            event_at         timestamptz,
            content_hash     text NOT NULL,
            seen_count       integer NOT NULL DEFAULT 1,
            last_seen_at     timestamptz NOT NULL DEFAULT now(),
            access_count     integer NOT NULL DEFAULT 0,
            last_accessed_at timestamptz,
            metadata         jsonb NOT NULL DEFAULT '{{}}'::jsonb,
            created_at       timestamptz NOT NULL DEFAULT now(),
            UNIQUE (tenant_id, content_hash),
            CHECK (turn_end IS NULL OR turn_start IS NULL OR turn_end >= turn_start)
        )
        """
    )
    op.execute(
        f"""
        CREATE TABLE facts (
            id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
            tenant_id        text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            memory_id        uuid REFERENCES memories (id) ON DELETE SET NULL,
            conversation_id  uuid REFERENCES conversations (id) ON DELETE SET NULL,
            source_turn_ids  text[] NOT NULL DEFAULT '{{}}',
            subject          text,
            text             text NOT NULL CHECK (length(text) > 0),
            embedding        vector({dim}),
            tsv              tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED,
            fact_type        text NOT NULL DEFAULT 'world'
                             CHECK (fact_type IN ('world', 'experience', 'inference')),
            confidence       real NOT NULL DEFAULT 0.8 CHECK (confidence BETWEEN 0 AND 1),
            entities         jsonb NOT NULL DEFAULT '[]'::jsonb,
            valid_from       timestamptz,
            valid_to         timestamptz,
            recorded_at      timestamptz NOT NULL DEFAULT now(),
            expired_at       timestamptz,
            status           text NOT NULL DEFAULT 'active'
                             CHECK (status IN ('active', 'superseded', 'retracted')),
            superseded_by    uuid REFERENCES facts (id) ON DELETE SET NULL,
            metadata         jsonb NOT NULL DEFAULT '{{}}'::jsonb,
            created_at       timestamptz NOT NULL DEFAULT now(),
            CHECK (valid_to IS NULL OR valid_from IS NULL OR valid_to >= valid_from),
            CHECK (expired_at IS NULL OR expired_at >= recorded_at)
        )
        """
    )

    for table in ("memories", "facts"):
        op.execute(
            f"CREATE INDEX {table}_embedding_hnsw ON {table} "
            "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
        )
        op.execute(f"CREATE INDEX {table}_tsv_gin ON {table} USING gin (tsv)")
        if _has_extension("pg_textsearch"):
            op.execute(
                f"CREATE INDEX {table}_text_bm25 ON {table} "
                "USING bm25 (text) WITH (text_config = 'english')"
            )
    op.execute("CREATE INDEX memories_tenant_created ON memories (tenant_id, created_at DESC)")
    op.execute("CREATE INDEX memories_tenant_source ON memories (tenant_id, source)")
    op.execute("CREATE INDEX memories_tenant_event ON memories (tenant_id, event_at)")
    op.execute("CREATE INDEX memories_conversation ON memories (conversation_id)")
    op.execute("CREATE INDEX facts_tenant_subject ON facts (tenant_id, subject)")
    op.execute("CREATE INDEX facts_tenant_validity ON facts (tenant_id, valid_from, valid_to)")
    op.execute("CREATE INDEX facts_memory ON facts (memory_id)")
    op.execute("CREATE INDEX facts_open ON facts (tenant_id) WHERE expired_at IS NULL")

    _create_app_role(role)
    _enable_row_level_security(role)


def _create_app_role(role: str) -> None:
    bind = op.get_bind()
    exists = bind.execute(sa.text("SELECT 1 FROM pg_roles WHERE rolname = :r"), {"r": role}).first()
    ident = _quote_ident(role)
    if not exists:
        op.execute(f"CREATE ROLE {ident} NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE")
    superuser = bind.execute(sa.text("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"))
    if not superuser.scalar():
        # A non-superuser migrator must be able to SET ROLE to the app role.
        op.execute(f"GRANT {ident} TO CURRENT_USER")
    op.execute(f"GRANT USAGE ON SCHEMA public TO {ident}")
    op.execute(
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON tenants, {', '.join(TENANT_TABLES)} TO {ident}"
    )
    op.execute(f"GRANT SELECT ON elephant_meta, alembic_version TO {ident}")


def _enable_row_level_security(role: str) -> None:
    setting = f"current_setting('{TENANT_SETTING}', true)"
    op.execute("ALTER TABLE tenants ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE tenants FORCE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY tenant_isolation ON tenants USING (id = {setting}) WITH CHECK (id = {setting})"
    )
    for table in TENANT_TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_isolation ON {table} "
            f"USING (tenant_id = {setting}) WITH CHECK (tenant_id = {setting})"
        )


def downgrade() -> None:
    _, _, role = _params()
    ident = _quote_ident(role)
    for table in ("facts", "memories", "turns", "conversations", "tenants", "elephant_meta"):
        op.execute(f"DROP TABLE IF EXISTS {table} CASCADE")
    # The role is cluster-wide and may serve other databases: keep it, drop its grants here.
    op.execute(f"REVOKE ALL ON SCHEMA public FROM {ident}")
    op.execute(f"REVOKE ALL ON alembic_version FROM {ident}")
    for extension in ("pg_textsearch", "age", "vector"):
        # Only what exists: with AGE preloaded but never created (the managed mode),
        # even DROP EXTENSION IF EXISTS age fails in AGE's hook (no ag_catalog schema).
        if _has_extension(extension):
            op.execute(f"DROP EXTENSION {extension}")
