"""Knowledge graph: per-tenant AGE graphs, observations as facts, entity links, analyst views.

Entities and relations live in Apache AGE (one graph per tenant, created on the
tenant's first graph write, registered in `graphs`). Observations are facts
(`observation_kind`), linked to their entity in `fact_entities`, which also
links extracted facts to the entities they mention, so the graph lane of search
can reach facts through an index that works under row-level security.

Revision ID: 0005_graph
Revises: 0004_sessions
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

from app.db.resources import load_sql

revision = "0005_graph"
down_revision = "0004_sessions"
branch_labels = None
depends_on = None

TENANT_SETTING = "elephant.tenant_id"
OBSERVATION_KINDS = ("note", "decided", "rejected", "because", "touches")


def _role() -> str:
    return '"' + str(context.config.attributes["app_role"]).replace('"', '""') + '"'


def upgrade() -> None:
    kinds = ", ".join(f"'{kind}'" for kind in OBSERVATION_KINDS)
    op.execute(
        f"ALTER TABLE facts ADD COLUMN observation_kind text CHECK (observation_kind IN ({kinds}))"
    )
    # Entity + kind + normalised text: one active copy of an observation per entity.
    op.execute("ALTER TABLE facts ADD COLUMN observation_key text")
    op.execute(
        "CREATE UNIQUE INDEX facts_active_observation ON facts (tenant_id, observation_key) "
        "WHERE status = 'active' AND observation_key IS NOT NULL"
    )
    op.execute(
        """
        CREATE TABLE graphs (
            tenant_id  text PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
            graph_name text NOT NULL UNIQUE,
            created_at timestamptz NOT NULL DEFAULT now()
        )
        """
    )
    op.execute(
        """
        CREATE TABLE fact_entities (
            tenant_id  text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            fact_id    uuid NOT NULL REFERENCES facts (id) ON DELETE CASCADE,
            entity_key text NOT NULL,
            link       text NOT NULL CHECK (link IN ('about', 'mentions')),
            PRIMARY KEY (fact_id, entity_key)
        )
        """
    )
    op.execute("CREATE INDEX fact_entities_entity ON fact_entities (tenant_id, entity_key)")

    role = _role()
    setting = f"current_setting('{TENANT_SETTING}', true)"
    op.execute(f"GRANT SELECT ON graphs TO {role}")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON fact_entities TO {role}")
    for table in ("graphs", "fact_entities"):
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_isolation ON {table} "
            f"USING (tenant_id = {setting}) WITH CHECK (tenant_id = {setting})"
        )
    age = bind_has_age()
    if age:
        # Before any app connection exists: Postgres caches each session's effective
        # search path without the schemas the role may not use.
        op.execute(f"GRANT USAGE ON SCHEMA ag_catalog TO {role}")
    op.execute(load_sql("graph_views.sql"))
    for view in ("graph_entities", "graph_relations", "current_facts"):
        op.execute(f"GRANT SELECT ON {view} TO {role}")
    op.execute("UPDATE elephant_meta SET schema_version = '0005_graph', updated_at = now()")


def bind_has_age() -> bool:
    row = op.get_bind().execute(sa.text("SELECT 1 FROM pg_extension WHERE extname = 'age'"))
    return row.first() is not None


def downgrade() -> None:
    bind = op.get_bind()
    graphs = [row[0] for row in bind.execute(sa.text("SELECT graph_name FROM graphs"))]
    if bind_has_age():
        op.execute(f"REVOKE USAGE ON SCHEMA ag_catalog FROM {_role()}")
    for name in graphs:
        bind.execute(sa.text("SELECT ag_catalog.drop_graph(:g, true)"), {"g": name})
    for view in ("current_facts", "graph_relations", "graph_entities"):
        op.execute(f"DROP VIEW IF EXISTS {view}")
    op.execute("DROP FUNCTION IF EXISTS elephant_graph_relations()")
    op.execute("DROP FUNCTION IF EXISTS elephant_graph_entities()")
    op.execute("DROP TABLE IF EXISTS fact_entities")
    op.execute("DROP TABLE IF EXISTS graphs")
    op.execute("DROP INDEX IF EXISTS facts_active_observation")
    op.execute("ALTER TABLE facts DROP COLUMN IF EXISTS observation_key")
    op.execute("ALTER TABLE facts DROP COLUMN IF EXISTS observation_kind")
    op.execute("UPDATE elephant_meta SET schema_version = '0004_sessions', updated_at = now()")
