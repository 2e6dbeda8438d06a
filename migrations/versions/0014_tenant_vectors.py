"""How each tenant's vector lanes are served: an exact scan, the shared HNSW graphs, or
HNSW indexes of its own.

One HNSW graph per table is shared by every tenant, and row-level security filters its
walk afterwards: a small tenant beside a big one walks past the big one's rows (slowly,
and missing some of its own nearest rows), and a big tenant pays for the walk past the
others. So a tenant below ``search.tenant_index_rows`` vector rows is searched exactly
through its ``tenant_id`` index, and a tenant above it gets partial HNSW indexes of its
own (``<table>_embedding_t_<hash> ... WHERE tenant_id = '<tenant>'``), built online
(CREATE INDEX CONCURRENTLY) by the worker (app/db/tenant_indexes.py); until they are
valid it is served by the shared graphs, as every tenant was before.

- `tenant_vector_ways`: the way each tenant is served and the counts it was chosen by;
  the app role reads its own tenant's row, the worker's admin connection writes.
  Filled here from today's counts: tenants already above the default threshold are
  served by the shared graphs until their own indexes are built.
- The vectors of memories, facts and passages are stored in the row (STORAGE MAIN), so
  the exact scan does not fetch each one back from TOAST.
- `passages_tenant`: the exact scan's way into a tenant's passages (memories and facts
  already have tenant-leading indexes).
- `facts_preferences_hnsw`: a partial HNSW graph over preference facts only, so the
  preference lane of a big tenant no longer reads every preference it has.

Revision ID: 0014_tenant_vectors
Revises: 0013_keyword_index
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import context, op

revision = "0014_tenant_vectors"
down_revision = "0013_keyword_index"
branch_labels = None
depends_on = None

TENANT_SETTING = "elephant.tenant_id"
DEFAULT_THRESHOLD = 20_000  # search.tenant_index_rows' default


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def upgrade() -> None:
    app = _quote(str(context.config.attributes["app_role"]))
    op.execute(
        """
        CREATE TABLE tenant_vector_ways (
            tenant_id     text PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
            way           text NOT NULL CHECK (way IN ('exact', 'shared', 'own')),
            vector_rows   bigint NOT NULL CHECK (vector_rows >= 0),
            counted_at    timestamptz NOT NULL DEFAULT now(),
            indexed_at    timestamptz,
            build_seconds real CHECK (build_seconds >= 0)
        )
        """
    )
    op.execute(f"GRANT SELECT ON tenant_vector_ways TO {app}")
    op.execute("ALTER TABLE tenant_vector_ways ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE tenant_vector_ways FORCE ROW LEVEL SECURITY")
    setting = f"current_setting('{TENANT_SETTING}', true)"
    op.execute(
        f"CREATE POLICY tenant_isolation ON tenant_vector_ways USING (tenant_id = {setting})"
    )
    for column, text in (
        ("", "How the vector lanes of each tenant are served (migration 0014; "
             "app/db/tenant_indexes.py): exact (a scan of its own rows through its tenant_id "
             "index, below search.tenant_index_rows), own (partial HNSW indexes of its own, "
             "WHERE tenant_id = it), or shared (the HNSW graphs every tenant shares, while "
             "its own are being built). Written by the worker; search reads its own row."),
        (".tenant_id", "The tenant."),
        (".way", "exact, own or shared (see the table comment)."),
        (".vector_rows", "Rows with a vector in its largest vector table (memories, facts, "
                         "passages) when last counted."),
        (".counted_at", "When vector_rows was counted."),
        (".indexed_at", "When its own HNSW indexes became valid (way own)."),
        (".build_seconds", "How long building its own HNSW indexes took, all tables."),
    ):  # fmt: skip
        target = "TABLE tenant_vector_ways" if not column else f"COLUMN tenant_vector_ways{column}"
        op.execute(f"COMMENT ON {target} IS '{text}'")
    # Vectors stay in the row (MAIN: compressed or moved out last, after the text), so an
    # exact scan reads each candidate's vector from its heap page, not from TOAST (a
    # 5-turn window's row is ~2.5 kB, over the 2 kB TOAST threshold: with the default
    # EXTERNAL the 1.5 kB vector went out first, ~12 us per row to fetch back). Rows
    # written before keep their place until rewritten.
    for table in ("memories", "facts", "passages"):
        op.execute(f"ALTER TABLE {table} ALTER COLUMN embedding SET STORAGE MAIN")
    op.execute("CREATE INDEX passages_tenant ON passages (tenant_id)")
    op.execute(
        "CREATE INDEX facts_preferences_hnsw ON facts "
        "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64) "
        "WHERE fact_type = 'preference'"
    )
    op.execute(
        "COMMENT ON INDEX passages_tenant IS 'A tenant''s passages, for the exact scan of "
        "a tenant below search.tenant_index_rows (migration 0014).'"
    )
    # (no comment on the HNSW index: a re-embed rebuilds vector indexes without theirs)
    # Tenants already above the default threshold keep the shared graphs until the worker
    # has built their own indexes; the others are exact from now on.
    op.execute(
        f"""
        INSERT INTO tenant_vector_ways (tenant_id, way, vector_rows)
        SELECT t.id,
               CASE WHEN greatest(m.n, f.n, p.n) >= {DEFAULT_THRESHOLD}
                    THEN 'shared' ELSE 'exact' END,
               greatest(m.n, f.n, p.n)
        FROM tenants AS t
        CROSS JOIN LATERAL (SELECT count(*) AS n FROM memories
                            WHERE tenant_id = t.id AND embedding IS NOT NULL) AS m
        CROSS JOIN LATERAL (SELECT count(*) AS n FROM facts
                            WHERE tenant_id = t.id AND embedding IS NOT NULL) AS f
        CROSS JOIN LATERAL (SELECT count(*) AS n FROM passages
                            WHERE tenant_id = t.id AND embedding IS NOT NULL) AS p
        """
    )
    op.execute(
        "UPDATE elephant_meta SET schema_version = '0014_tenant_vectors', updated_at = now()"
    )


def downgrade() -> None:
    op.execute(
        """
        DO $$
        DECLARE name text;
        BEGIN
            FOR name IN SELECT indexname FROM pg_indexes
                        WHERE indexname ~ '^(memories|facts|passages)_embedding_t_[0-9a-f]+$'
            LOOP
                EXECUTE format('DROP INDEX %I', name);
            END LOOP;
        END $$
        """
    )
    for table in ("memories", "facts", "passages"):
        op.execute(f"ALTER TABLE {table} ALTER COLUMN embedding SET STORAGE EXTERNAL")
    op.execute("DROP INDEX facts_preferences_hnsw")
    op.execute("DROP INDEX passages_tenant")
    op.execute("DROP TABLE tenant_vector_ways")
    op.execute("UPDATE elephant_meta SET schema_version = '0013_keyword_index', updated_at = now()")
