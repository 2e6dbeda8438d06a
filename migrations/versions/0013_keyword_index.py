"""When each BM25 index was last rebuilt, and for which start of the server.

pg_textsearch 1.0.0 (the embedded build) writes its corpus statistics only when an
index is built, writes no WAL, and on every server start overwrites the statistics it
recounted with the stale ones it built with: an index created on an empty table then
finds nothing after a restart, and rows written since the last checkpoint drop out of
it after a crash (app/db/keyword_index.py has the details and the source lines). The
remedy is a REINDEX once per server start; this table says which start each index was
rebuilt for, so that processes opening the database later (a worker, the CLI) do not
rebuild it again under a running API.

Admin only: the app role has no grant on it.

Revision ID: 0013_keyword_index
Revises: 0012_access_stats
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0013_keyword_index"
down_revision = "0012_access_stats"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE keyword_index_repairs (
            index_name        text PRIMARY KEY,
            server_started_at timestamptz NOT NULL,
            repaired_at       timestamptz NOT NULL DEFAULT now(),
            reason            text NOT NULL,
            seconds           real NOT NULL CHECK (seconds >= 0)
        )
        """
    )
    for column, text in (
        ("", "The last rebuild (REINDEX) of each pg_textsearch BM25 index: pg_textsearch "
             "1.0.0 keeps neither its statistics nor its newest postings across a server "
             "restart, so each index is rebuilt once per start of the server (migration "
             "0013; app/db/keyword_index.py)."),
        (".index_name", "The bm25 index (memories_text_bm25, facts_text_bm25)."),
        (".server_started_at", "pg_postmaster_start_time() of the server it was rebuilt for."),
        (".repaired_at", "When the rebuild finished."),
        (".reason", "Why: the server restarted, or the probe found rows the index did not."),
        (".seconds", "How long the REINDEX took."),
    ):  # fmt: skip
        target = (
            "TABLE keyword_index_repairs" if not column else f"COLUMN keyword_index_repairs{column}"
        )
        op.execute(f"COMMENT ON {target} IS '{text}'")
    op.execute("UPDATE elephant_meta SET schema_version = '0013_keyword_index', updated_at = now()")


def downgrade() -> None:
    op.execute("DROP TABLE keyword_index_repairs")
    op.execute("UPDATE elephant_meta SET schema_version = '0012_access_stats', updated_at = now()")
