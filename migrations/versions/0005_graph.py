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

revision = "0005_graph"
down_revision = "0004_sessions"
branch_labels = None
depends_on = None

TENANT_SETTING = "elephant.tenant_id"
OBSERVATION_KINDS = ("note", "decided", "rejected", "because", "touches")

# The analyst views as this migration created them: sql/graph_views.sql of commit 74418d9
# (git blob 9180c52), frozen here because that file changed afterwards and a migration
# must create the same objects whenever it runs. Their current definition is re-applied
# after every upgrade from sql/objects/10_graph_views.sql (see migrations/README.md).
GRAPH_VIEWS = """\
-- Analyst views of the knowledge graph and of current facts.
--
-- The graph lives in Apache AGE, one graph per tenant (table `graphs`). These
-- views expose it as ordinary columns. They run with the caller's rights: the
-- app role sees only its tenant's rows (row-level security on `graphs`), a
-- superuser sees every tenant.
--
--   SELECT name, role, domain FROM graph_entities WHERE role = 'decision';
--   SELECT source, relation, target FROM graph_relations WHERE valid_to IS NULL;
--   SELECT text, valid_from FROM current_facts WHERE 'caroline' = ANY (entity_keys);

CREATE FUNCTION elephant_graph_entities()
RETURNS TABLE (tenant_id text, key text, name text, role text, domain text, epistemic text,
               source text, valid_from timestamptz, valid_to timestamptz,
               created_at timestamptz, updated_at timestamptz)
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    g record;
BEGIN
    FOR g IN SELECT t.tenant_id, t.graph_name FROM graphs AS t ORDER BY t.tenant_id LOOP
        RETURN QUERY EXECUTE format(
            $q$SELECT %L::text, p->>'key', p->>'name', p->>'role', p->>'domain',
                      p->>'epistemic', p->>'source', (p->>'valid_from')::timestamptz,
                      (p->>'valid_to')::timestamptz, (p->>'created_at')::timestamptz,
                      (p->>'updated_at')::timestamptz
                 FROM (SELECT properties::text::jsonb AS p FROM %I."Entity") AS v$q$,
            g.tenant_id, g.graph_name);
    END LOOP;
END
$fn$;

CREATE FUNCTION elephant_graph_relations()
RETURNS TABLE (tenant_id text, source text, relation text, target text, epistemic text,
               valid_from timestamptz, valid_to timestamptz, recorded_at timestamptz)
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    g record;
BEGIN
    FOR g IN SELECT t.tenant_id, t.graph_name FROM graphs AS t ORDER BY t.tenant_id LOOP
        RETURN QUERY EXECUTE format(
            $q$SELECT %L::text, s.properties::text::jsonb->>'name', c.relname::text,
                      d.properties::text::jsonb->>'name', r.p->>'epistemic',
                      (r.p->>'valid_from')::timestamptz, (r.p->>'valid_to')::timestamptz,
                      (r.p->>'recorded_at')::timestamptz
                 FROM (SELECT e.tableoid, e.start_id, e.end_id, e.properties::text::jsonb AS p
                         FROM %I._ag_label_edge AS e) AS r
                 JOIN pg_class AS c ON c.oid = r.tableoid
                 JOIN %I."Entity" AS s ON s.id = r.start_id
                 JOIN %I."Entity" AS d ON d.id = r.end_id$q$,
            g.tenant_id, g.graph_name, g.graph_name, g.graph_name);
    END LOOP;
END
$fn$;

CREATE VIEW graph_entities WITH (security_invoker = true) AS SELECT * FROM elephant_graph_entities();

CREATE VIEW graph_relations WITH (security_invoker = true) AS SELECT * FROM elephant_graph_relations();

-- Facts true now: not retracted or superseded, inside their validity interval.
CREATE VIEW current_facts WITH (security_invoker = true) AS
SELECT f.tenant_id, f.id, f.text, f.subject, f.fact_type, f.observation_kind, f.source,
       f.valid_from, f.valid_to, f.recorded_at, f.importance, f.confidence,
       coalesce((SELECT array_agg(fe.entity_key ORDER BY fe.entity_key)
                   FROM fact_entities AS fe WHERE fe.fact_id = f.id), '{}') AS entity_keys
  FROM facts AS f
 WHERE f.status = 'active'
   AND f.expired_at IS NULL
   AND (f.valid_from IS NULL OR f.valid_from <= now())
   AND (f.valid_to IS NULL OR f.valid_to > now());
"""


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
    op.execute(GRAPH_VIEWS)
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
