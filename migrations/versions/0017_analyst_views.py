"""Analysts read through a fence: a schema per analyst whose views name its tenants.

Row-level security filtered an analyst's rows, but the filter ran after the index
condition: ``EXPLAIN ANALYZE ... WHERE tenant_id = 'b' AND subject >= 'G'`` counted B's
rows removed by the policy, and a prefix walk read B's values (issue 40). Now an analyst
reads no tenant table, view or graph of `public` at all:

- `analyst_<name>` (one schema per analyst, owned by the migrator, USAGE for that
  analyst's role only) holds one view per tenant table (every table with the
  `analyst_only` policy) and per analyst view (`current_facts`, `graph_entities`,
  `graph_relations`), plus the analyst's own `analyst_grants`. Each view is a security
  barrier that names the granted tenants as constants, checks they are still granted
  (a tenant erased and created again under the same id is not shown), and ends in
  ``OFFSET 0``: Postgres pushes none of the caller's conditions below it, so the base
  scan's only conditions are the view's own. The role's search_path is that schema, then
  `public`, so `FROM memories` reads the view.
- `elephant_analyst_fence(role)` (re)builds the schema from `analyst_grants`, grants the
  role its tenants' AGE graphs, and sets its search_path; `elephant_analyst_unfence(role)`
  drops the schema and every privilege granted to the role here. Run by the migrator.
- `elephant_fenced_graph_entities(schema)` / `..._relations(schema)`: the graph views'
  rows read through the fenced `graphs`, `kg_entities`, `kg_relations` of one schema.
- The analyst group loses SELECT on the tenant tables, the analyst views,
  `analyst_grants` and every AGE graph (USAGE on its schema too). A graph's tables are
  granted to the roles of the analysts of its tenant (here, at `analysts create`, and by
  `elephant_secure_graph` when a graph is provisioned later); its analyst policies no
  longer read `analyst_grants` (the privilege is the fence).
- `analyst_fence` policy (to the migrator, who owns the views): a non-superuser owner of
  FORCE ROW LEVEL SECURITY tables reads rows through an analyst's view only while the
  current user is an analyst. A superuser owner ignores it.

Revision ID: 0017_analyst_views
Revises: 0016_store_items
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision = "0017_analyst_views"
down_revision = "0016_store_items"
branch_labels = None
depends_on = None

TENANT_SETTING = "elephant.tenant_id"
VIEWS = ("graph_entities", "graph_relations", "current_facts")
GRANTED = (
    "(SELECT g.tenant_id FROM public.analyst_grants AS g WHERE g.role_name = current_user::text)"
)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _group() -> str:
    app_role = str(context.config.attributes["app_role"])
    return f"{app_role[:55]}_analyst"


def _fenced_tables() -> list[str]:
    """Every public table an analyst read under 0015 (the analyst_only policy)."""
    rows = (
        op.get_bind()
        .execute(
            sa.text(
                "SELECT DISTINCT tablename::text FROM pg_policies "
                "WHERE schemaname = 'public' AND policyname = 'analyst_only' ORDER BY 1"
            )
        )
        .scalars()
        .all()
    )
    return [str(t) for t in rows]


def _existing_graphs() -> list[tuple[str, str]]:
    """(graph, tenant) of every AGE graph (as 0015 finds them)."""
    bind = op.get_bind()
    if bind.execute(sa.text("SELECT to_regclass('ag_catalog.ag_graph')")).scalar() is None:
        return []
    rows = bind.execute(
        sa.text(
            "SELECT elephant_graph_name(t) AS graph, t AS tenant "
            "FROM elephant_maintenance_tenants() AS t "
            "WHERE EXISTS (SELECT 1 FROM ag_catalog.ag_graph AS g "
            "WHERE g.name::text = elephant_graph_name(t))"
        )
    ).all()
    return [(str(graph), str(tenant)) for graph, tenant in rows]


def _analyst_roles() -> list[str]:
    rows = op.get_bind().execute(sa.text("SELECT role_name FROM analysts ORDER BY 1"))
    return [str(r) for r in rows.scalars().all()]


def upgrade() -> None:
    group_name = _group()
    group = _quote(group_name)
    for table in _fenced_tables():
        op.execute(f"REVOKE SELECT ON {table} FROM {group}")
        op.execute(
            f"CREATE POLICY analyst_fence ON {table} FOR SELECT TO CURRENT_USER "
            f"USING (pg_has_role(current_user, '{group_name}', 'MEMBER'))"
        )
    for view in VIEWS:
        op.execute(f"REVOKE SELECT ON {view} FROM {group}")
    op.execute(f"REVOKE SELECT ON analyst_grants FROM {group}")
    op.execute(_graph_rows_functions())
    op.execute(_FENCE)
    op.execute(_UNFENCE)
    for function in ("elephant_analyst_fence(text)", "elephant_analyst_unfence(text)"):
        op.execute(f"REVOKE ALL ON FUNCTION {function} FROM PUBLIC")
    op.execute(_secure_graph_fenced(group_name))
    bind = op.get_bind()
    for graph, tenant in _existing_graphs():
        _unsecure_graph_for_group(graph, group)
        bind.execute(sa.text("SELECT elephant_secure_graph(:g, :t)"), {"g": graph, "t": tenant})
    for role in _analyst_roles():
        bind.execute(sa.text("SELECT elephant_analyst_fence(:r)"), {"r": role})
    op.execute("UPDATE elephant_meta SET schema_version = '0017_analyst_views', updated_at = now()")


def _unsecure_graph_for_group(graph: str, group: str) -> None:
    """Drop one graph's analyst policies and the group's privileges on it."""
    tables = (
        op.get_bind()
        .execute(
            sa.text(
                "SELECT c.relname FROM pg_class AS c JOIN pg_namespace AS n "
                "ON n.oid = c.relnamespace WHERE n.nspname = :g AND c.relkind IN ('r', 'p')"
            ),
            {"g": graph},
        )
        .scalars()
        .all()
    )
    for table in tables:
        target = f"{_quote(graph)}.{_quote(table)}"
        op.execute(f"DROP POLICY IF EXISTS analyst_read ON {target}")
        op.execute(f"DROP POLICY IF EXISTS analyst_only ON {target}")
        op.execute(f"REVOKE ALL ON {target} FROM {group}")
    op.execute(f"REVOKE ALL ON SCHEMA {_quote(graph)} FROM {group}")


def _graph_rows_functions() -> str:
    return """
CREATE FUNCTION elephant_fenced_graph_entities(p_schema text)
RETURNS TABLE (tenant_id text, key text, name text, role text, domain text, epistemic text,
               source text, valid_from timestamptz, valid_to timestamptz,
               created_at timestamptz, updated_at timestamptz)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, public AS $fn$
DECLARE
    g record;
BEGIN
    FOR g IN EXECUTE format(
        'SELECT t.tenant_id, t.graph_name FROM %I.graphs AS t ORDER BY t.tenant_id', p_schema)
    LOOP
        RETURN QUERY EXECUTE format(
            $q$SELECT %L::text, p->>'key', p->>'name', p->>'role', p->>'domain',
                      p->>'epistemic', p->>'source', (p->>'valid_from')::timestamptz,
                      (p->>'valid_to')::timestamptz, (p->>'created_at')::timestamptz,
                      (p->>'updated_at')::timestamptz
                 FROM (SELECT properties::text::jsonb AS p FROM %I."Entity") AS v$q$,
            g.tenant_id, g.graph_name);
    END LOOP;
    RETURN QUERY EXECUTE format(
        $q$SELECT e.tenant_id, e.key COLLATE "default", e.name, e.role, e.domain,
                  e.epistemic, e.source, e.valid_from, e.valid_to, e.created_at, e.updated_at
             FROM %I.kg_entities AS e ORDER BY e.tenant_id, e.key$q$, p_schema);
END
$fn$;

CREATE FUNCTION elephant_fenced_graph_relations(p_schema text)
RETURNS TABLE (tenant_id text, source text, relation text, target text, epistemic text,
               valid_from timestamptz, valid_to timestamptz, recorded_at timestamptz)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, public AS $fn$
DECLARE
    g record;
BEGIN
    FOR g IN EXECUTE format(
        'SELECT t.tenant_id, t.graph_name FROM %I.graphs AS t ORDER BY t.tenant_id', p_schema)
    LOOP
        RETURN QUERY EXECUTE format(
            $q$SELECT %L::text, s.properties::text::jsonb->>'name', c.relname::text,
                      d.properties::text::jsonb->>'name', r.p->>'epistemic',
                      (r.p->>'valid_from')::timestamptz, (r.p->>'valid_to')::timestamptz,
                      (r.p->>'recorded_at')::timestamptz
                 FROM (SELECT e.tableoid, e.start_id, e.end_id, e.properties::text::jsonb AS p
                         FROM %I._ag_label_edge AS e) AS r
                 JOIN pg_class AS c ON c.oid = r.tableoid
                 JOIN %I."Entity" AS s ON s.id OPERATOR(ag_catalog.=) r.start_id
                 JOIN %I."Entity" AS d ON d.id OPERATOR(ag_catalog.=) r.end_id$q$,
            g.tenant_id, g.graph_name, g.graph_name, g.graph_name);
    END LOOP;
    RETURN QUERY EXECUTE format(
        $q$SELECT r.tenant_id, s.name, r.relation_type, d.name, r.epistemic,
                  r.valid_from, r.valid_to, r.recorded_at
             FROM %1$I.kg_relations AS r
             JOIN %1$I.kg_entities AS s ON s.tenant_id = r.tenant_id AND s.key = r.source_key
             JOIN %1$I.kg_entities AS d ON d.tenant_id = r.tenant_id AND d.key = r.target_key$q$,
        p_schema);
END
$fn$;
"""


# One view per fenced table: the granted tenants as constants, still granted, OFFSET 0.
_FENCE = """
CREATE FUNCTION elephant_analyst_fence(p_role text) RETURNS integer
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, public AS $fn$
DECLARE
    v_schema text;
    v_tenants text[];
    v_where text;
    v_def text;
    t record;
    built integer := 0;
BEGIN
    SELECT 'analyst_' || a.name INTO v_schema FROM analysts AS a WHERE a.role_name = p_role;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no analyst has the role %', p_role USING ERRCODE = '22023';
    END IF;
    SELECT coalesce(array_agg(g.tenant_id ORDER BY g.tenant_id), '{}') INTO v_tenants
      FROM analyst_grants AS g WHERE g.role_name = p_role;
    EXECUTE format('DROP SCHEMA IF EXISTS %I CASCADE', v_schema);
    EXECUTE format('CREATE SCHEMA %I', v_schema);
    EXECUTE format('REVOKE ALL ON SCHEMA %I FROM PUBLIC', v_schema);
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', v_schema, p_role);
    FOR t IN SELECT DISTINCT p.tablename::text AS relname,
                    CASE WHEN p.tablename = 'tenants' THEN 'id' ELSE 'tenant_id' END AS col
               FROM pg_policies AS p
              WHERE p.schemaname = 'public' AND p.policyname = 'analyst_only'
              ORDER BY 1 LOOP
        v_where := format(
            'x.%1$I = ANY (%2$L::text[]) AND x.%1$I IN (SELECT g.tenant_id '
            'FROM public.analyst_grants AS g WHERE g.role_name = %3$L)',
            t.col, v_tenants, p_role);
        EXECUTE format(
            'CREATE VIEW %I.%I WITH (security_barrier) AS '
            'SELECT x.* FROM public.%I AS x WHERE %s OFFSET 0',
            v_schema, t.relname, t.relname, v_where);
        built := built + 1;
    END LOOP;
    EXECUTE format(
        'CREATE VIEW %I.analyst_grants WITH (security_barrier) AS SELECT g.role_name, '
        'g.tenant_id, g.granted_at FROM public.analyst_grants AS g WHERE g.role_name = %L '
        'OFFSET 0', v_schema, p_role);
    -- current_facts as public defines it, over this schema's fenced facts.
    v_def := rtrim(pg_get_viewdef('public.current_facts'::regclass), E'; \\n');
    PERFORM set_config('search_path', format('%I, pg_catalog, public', v_schema), true);
    EXECUTE format('CREATE VIEW %I.current_facts WITH (security_barrier) AS %s', v_schema, v_def);
    PERFORM set_config('search_path', 'pg_catalog, public', true);
    EXECUTE format(
        'CREATE VIEW %1$I.graph_entities WITH (security_barrier) AS '
        'SELECT * FROM public.elephant_fenced_graph_entities(%1$L) OFFSET 0', v_schema);
    EXECUTE format(
        'CREATE VIEW %1$I.graph_relations WITH (security_barrier) AS '
        'SELECT * FROM public.elephant_fenced_graph_relations(%1$L) OFFSET 0', v_schema);
    EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO %I', v_schema, p_role);
    FOR t IN SELECT elephant_graph_name(u) AS graph FROM unnest(v_tenants) AS u
              WHERE to_regnamespace(quote_ident(elephant_graph_name(u))) IS NOT NULL LOOP
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', t.graph, p_role);
        EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO %I', t.graph, p_role);
    END LOOP;
    EXECUTE format('ALTER ROLE %I SET search_path = %I, public', p_role, v_schema);
    RETURN built;
END
$fn$;
"""

_UNFENCE = """
CREATE FUNCTION elephant_analyst_unfence(p_role text) RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, public AS $fn$
DECLARE
    v_role oid := to_regrole(quote_ident(p_role));
    s record;
BEGIN
    FOR s IN SELECT 'analyst_' || a.name AS nspname FROM analysts AS a
              WHERE a.role_name = p_role LOOP
        EXECUTE format('DROP SCHEMA IF EXISTS %I CASCADE', s.nspname);
    END LOOP;
    IF v_role IS NULL THEN
        RETURN;
    END IF;
    FOR s IN SELECT n.nspname FROM pg_namespace AS n, aclexplode(n.nspacl) AS a
              WHERE a.grantee = v_role
             UNION
             SELECT n.nspname FROM pg_class AS c
               JOIN pg_namespace AS n ON n.oid = c.relnamespace, aclexplode(c.relacl) AS a
              WHERE a.grantee = v_role LOOP
        EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA %I FROM %I', s.nspname, p_role);
        EXECUTE format('REVOKE ALL ON SCHEMA %I FROM %I', s.nspname, p_role);
    END LOOP;
END
$fn$;
"""


def _secure_graph_fenced(group: str) -> str:
    """elephant_secure_graph: a graph's tables read by its tenant's analyst roles only
    (granted here, also to a graph provisioned after the analyst was created), with
    analyst policies that read no table (the privilege is the fence)."""
    return f"""
        CREATE OR REPLACE FUNCTION elephant_secure_graph(p_graph text, p_tenant text)
        RETURNS integer
        LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, public AS $$
        DECLARE
            t record;
            r record;
            secured integer := 0;
        BEGIN
            IF p_tenant !~ '^[a-z0-9][a-z0-9_-]{{0,62}}$' THEN
                RAISE EXCEPTION 'invalid tenant id %', p_tenant USING ERRCODE = '22023';
            END IF;
            EXECUTE format('GRANT USAGE ON SCHEMA ag_catalog TO %I', '{group}');
            FOR r IN SELECT g.role_name FROM analyst_grants AS g WHERE g.tenant_id = p_tenant LOOP
                EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', p_graph, r.role_name);
            END LOOP;
            FOR t IN SELECT c.relname FROM pg_class AS c
                       JOIN pg_namespace AS n ON n.oid = c.relnamespace
                      WHERE n.nspname = p_graph AND c.relkind IN ('r', 'p') LOOP
                EXECUTE format('ALTER TABLE %I.%I ENABLE ROW LEVEL SECURITY', p_graph, t.relname);
                EXECUTE format('ALTER TABLE %I.%I FORCE ROW LEVEL SECURITY', p_graph, t.relname);
                IF NOT EXISTS (SELECT 1 FROM pg_policies AS p
                                WHERE p.schemaname = p_graph AND p.tablename = t.relname
                                  AND p.policyname = 'tenant_isolation') THEN
                    EXECUTE format(
                        'CREATE POLICY tenant_isolation ON %I.%I '
                        'USING (current_setting(%L, true) = %L) '
                        'WITH CHECK (current_setting(%L, true) = %L)',
                        p_graph, t.relname, '{TENANT_SETTING}', p_tenant,
                        '{TENANT_SETTING}', p_tenant);
                END IF;
                IF NOT EXISTS (SELECT 1 FROM pg_policies AS p
                                WHERE p.schemaname = p_graph AND p.tablename = t.relname
                                  AND p.policyname = 'analyst_read') THEN
                    EXECUTE format(
                        'CREATE POLICY analyst_read ON %I.%I FOR SELECT TO %I USING (true)',
                        p_graph, t.relname, '{group}');
                    EXECUTE format(
                        'CREATE POLICY analyst_only ON %I.%I AS RESTRICTIVE TO %I '
                        'USING (true) WITH CHECK (false)',
                        p_graph, t.relname, '{group}');
                END IF;
                FOR r IN SELECT g.role_name FROM analyst_grants AS g
                          WHERE g.tenant_id = p_tenant LOOP
                    EXECUTE format('GRANT SELECT ON %I.%I TO %I', p_graph, t.relname, r.role_name);
                END LOOP;
                secured := secured + 1;
            END LOOP;
            RETURN secured;
        END
        $$
        """


def _secure_graph_0015(analyst_policies: bool, group: str) -> str:
    """elephant_secure_graph exactly as 0015 made it (for the downgrade)."""
    analyst = (
        f"""
                IF NOT EXISTS (SELECT 1 FROM pg_policies AS p
                                WHERE p.schemaname = p_graph AND p.tablename = t.relname
                                  AND p.policyname = 'analyst_read') THEN
                    EXECUTE format(
                        'CREATE POLICY analyst_read ON %I.%I FOR SELECT TO %I USING (%L IN {GRANTED})',
                        p_graph, t.relname, '{group}', p_tenant);
                    EXECUTE format(
                        'CREATE POLICY analyst_only ON %I.%I AS RESTRICTIVE TO %I '
                        'USING (%L IN {GRANTED}) WITH CHECK (false)',
                        p_graph, t.relname, '{group}', p_tenant);
                END IF;
                EXECUTE format('GRANT SELECT ON %I.%I TO %I', p_graph, t.relname, '{group}');"""
        if analyst_policies
        else ""
    )
    grants = (
        f"""
            EXECUTE format('GRANT USAGE ON SCHEMA ag_catalog TO %I', '{group}');
            EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', p_graph, '{group}');"""
        if analyst_policies
        else ""
    )
    return f"""
        CREATE OR REPLACE FUNCTION elephant_secure_graph(p_graph text, p_tenant text)
        RETURNS integer
        LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, public AS $$
        DECLARE
            t record;
            secured integer := 0;
        BEGIN
            IF p_tenant !~ '^[a-z0-9][a-z0-9_-]{{0,62}}$' THEN
                RAISE EXCEPTION 'invalid tenant id %', p_tenant USING ERRCODE = '22023';
            END IF;{grants}
            FOR t IN SELECT c.relname FROM pg_class AS c
                       JOIN pg_namespace AS n ON n.oid = c.relnamespace
                      WHERE n.nspname = p_graph AND c.relkind IN ('r', 'p') LOOP
                EXECUTE format('ALTER TABLE %I.%I ENABLE ROW LEVEL SECURITY', p_graph, t.relname);
                EXECUTE format('ALTER TABLE %I.%I FORCE ROW LEVEL SECURITY', p_graph, t.relname);
                IF NOT EXISTS (SELECT 1 FROM pg_policies AS p
                                WHERE p.schemaname = p_graph AND p.tablename = t.relname
                                  AND p.policyname = 'tenant_isolation') THEN
                    EXECUTE format(
                        'CREATE POLICY tenant_isolation ON %I.%I '
                        'USING (current_setting(%L, true) = %L) '
                        'WITH CHECK (current_setting(%L, true) = %L)',
                        p_graph, t.relname, '{TENANT_SETTING}', p_tenant,
                        '{TENANT_SETTING}', p_tenant);
                END IF;{analyst}
                secured := secured + 1;
            END LOOP;
            RETURN secured;
        END
        $$
        """


def downgrade() -> None:
    group_name = _group()
    group = _quote(group_name)
    bind = op.get_bind()
    for role in _analyst_roles():
        bind.execute(sa.text("SELECT elephant_analyst_unfence(:r)"), {"r": role})
        op.execute(f"ALTER ROLE {_quote(role)} SET search_path = public")
    op.execute(_secure_graph_0015(True, group_name))
    for graph, tenant in _existing_graphs():
        _unsecure_graph_for_group(graph, group)
        bind.execute(sa.text("SELECT elephant_secure_graph(:g, :t)"), {"g": graph, "t": tenant})
    for function in (
        "elephant_analyst_fence(text)",
        "elephant_analyst_unfence(text)",
        "elephant_fenced_graph_entities(text)",
        "elephant_fenced_graph_relations(text)",
    ):
        op.execute(f"DROP FUNCTION IF EXISTS {function}")
    op.execute(f"GRANT SELECT ON analyst_grants TO {group}")
    for view in VIEWS:
        op.execute(f"GRANT SELECT ON {view} TO {group}")
    for table in _fenced_tables():
        op.execute(f"DROP POLICY IF EXISTS analyst_fence ON {table}")
        op.execute(f"GRANT SELECT ON {table} TO {group}")
    op.execute("UPDATE elephant_meta SET schema_version = '0016_store_items', updated_at = now()")
