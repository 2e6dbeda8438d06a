"""Analyst roles bound to tenants; key and console functions that prove a secret.

- `<app role>_analyst` (`elephant_app_analyst`): a NOLOGIN group role. Each analyst
  is a LOGIN role in it (created by `elephant analysts create`), listed in `analysts`,
  with the tenants it may read in `analyst_grants`. The group reads the tenant tables,
  the analyst views and each tenant's AGE graph, read-only.
- Row-level security decides an analyst's tenants from `analyst_grants`, keyed by the
  role (`current_user`), never from `elephant.tenant_id`, which a session may set: each
  tenant table gets a permissive policy `analyst_read` (SELECT, the granted tenants)
  and a restrictive one `analyst_only` (whatever else would allow a row, an analyst
  sees only its granted tenants).
- `elephant_secure_graph` also gives the analyst group the graph of a tenant, bound the
  same way; re-run here for every existing graph.
- Keys: `elephant_verify_key(prefix, secret_hash, client)` replaces
  `elephant_lookup_key` and `elephant_touch_key`. It returns a key's reach only to a
  caller that presents the key's hash, records its use, and never returns the hash.
- Console: `elephant_console_sign_in(token_hash, prefix, secret_hash, ttl, client)`
  replaces `elephant_console_open(token_hash, key_id, ...)`. A session is opened only
  with proof of the key's secret, and every sign-in is written to the audit log.

Revision ID: 0015_analysts
Revises: 0014_tenant_vectors
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision = "0015_analysts"
down_revision = "0014_tenant_vectors"
branch_labels = None
depends_on = None

TENANT_SETTING = "elephant.tenant_id"
# Every table with a tenant_id and the tenant_isolation policy at 0014 (tenants: id).
TENANT_TABLES = (
    "access_stats",
    "admission_log",
    "contradictions",
    "conversations",
    "fact_entities",
    "facts",
    "feedback",
    "graphs",
    "handoffs",
    "jobs",
    "kg_entities",
    "kg_relations",
    "llm_usage",
    "maintenance_runs",
    "memories",
    "passages",
    "tenant_vector_ways",
    "turns",
)
VIEWS = ("graph_entities", "graph_relations", "current_facts")
GRANTED = (
    "(SELECT g.tenant_id FROM public.analyst_grants AS g WHERE g.role_name = current_user::text)"
)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def analyst_group(app_role: str) -> str:
    """`<app role>_analyst`, within Postgres' 63 characters."""
    return f"{app_role[:55]}_analyst"


def _roles() -> tuple[str, str]:
    app_role = str(context.config.attributes["app_role"])
    return _quote(app_role), analyst_group(app_role)


def upgrade() -> None:
    app, group_name = _roles()
    group = _quote(group_name)
    bind = op.get_bind()
    exists = bind.execute(
        sa.text("SELECT 1 FROM pg_roles WHERE rolname = :r"), {"r": group_name}
    ).first()
    if not exists:
        op.execute(
            f"CREATE ROLE {group} NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE "
            "NOREPLICATION"
        )
    _analyst_tables(group)
    _tenant_policies(group)
    _secure_graphs(group_name)
    _verify_key(app)
    _console_sign_in(app)
    op.execute("UPDATE elephant_meta SET schema_version = '0015_analysts', updated_at = now()")


def _analyst_tables(group: str) -> None:
    op.execute(
        """
        CREATE TABLE analysts (
            role_name          text PRIMARY KEY,
            name               text NOT NULL UNIQUE CHECK (name ~ '^[a-z][a-z0-9_]{0,29}$'),
            statement_timeout_seconds integer NOT NULL
                               CHECK (statement_timeout_seconds BETWEEN 1 AND 86400),
            created_by         text NOT NULL DEFAULT 'cli',
            created_at         timestamptz NOT NULL DEFAULT now()
        )
        """
    )
    op.execute(
        """
        CREATE TABLE analyst_grants (
            role_name  text NOT NULL REFERENCES analysts (role_name) ON DELETE CASCADE,
            tenant_id  text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            granted_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (role_name, tenant_id)
        )
        """
    )
    op.execute("CREATE INDEX analyst_grants_tenant ON analyst_grants (tenant_id)")
    # The owner (migrator) manages both; an analyst reads its own grants, nobody else any.
    op.execute("ALTER TABLE analysts ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE analyst_grants ENABLE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY own_grants ON analyst_grants FOR SELECT TO {group} "
        "USING (role_name = current_user::text)"
    )
    op.execute(f"GRANT SELECT ON analyst_grants TO {group}")
    for target, text in (
        ("TABLE analysts", "Analyst login roles (elephant analysts create): read-only SQL access "
         "to the tenants granted in analyst_grants."),
        ("COLUMN analysts.role_name", "The analyst''s LOGIN role (member of the analyst group)."),
        ("COLUMN analysts.name", "The analyst''s name as given at creation."),
        ("COLUMN analysts.statement_timeout_seconds", "The role''s statement_timeout."),
        ("COLUMN analysts.created_by", "Key prefix or cli that created it."),
        ("COLUMN analysts.created_at", "When it was created."),
        ("TABLE analyst_grants", "Which tenants each analyst role reads; row-level security "
         "of every tenant table keys on it (current_user), not on elephant.tenant_id."),
        ("COLUMN analyst_grants.role_name", "The analyst role (analysts.role_name)."),
        ("COLUMN analyst_grants.tenant_id", "A tenant it may read."),
        ("COLUMN analyst_grants.granted_at", "When the grant was made."),
    ):  # fmt: skip
        op.execute(f"COMMENT ON {target} IS '{text}'")


def _tenant_policies(group: str) -> None:
    op.execute(f"GRANT USAGE ON SCHEMA public TO {group}")
    for table, column in (("tenants", "id"), *((t, "tenant_id") for t in TENANT_TABLES)):
        op.execute(f"GRANT SELECT ON {table} TO {group}")
        op.execute(
            f"CREATE POLICY analyst_read ON {table} FOR SELECT TO {group} "
            f"USING ({column} IN {GRANTED})"
        )
        op.execute(
            f"CREATE POLICY analyst_only ON {table} AS RESTRICTIVE TO {group} "
            f"USING ({column} IN {GRANTED}) WITH CHECK (false)"
        )
    for view in VIEWS:
        op.execute(f"GRANT SELECT ON {view} TO {group}")


def _secure_graph_function(analyst_policies: bool, group: str) -> str:
    """elephant_secure_graph as 0006 made it, plus (analyst_policies) the analyst group's
    read access to the tenant's graph."""
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


def _existing_graphs() -> list[tuple[str, str]]:
    """(graph, tenant) of every AGE graph: through elephant_maintenance_tenants, which a
    non-superuser owner may call (tenants is FORCE ROW LEVEL SECURITY)."""
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


def _secure_graphs(group_name: str) -> None:
    op.execute(_secure_graph_function(True, group_name))
    bind = op.get_bind()
    if bind.execute(sa.text("SELECT to_regnamespace('ag_catalog')")).scalar() is not None:
        # Before any graph, so a database gets the same grants however old its graphs are.
        op.execute(f"GRANT USAGE ON SCHEMA ag_catalog TO {_quote(group_name)}")
    for graph, tenant in _existing_graphs():
        bind.execute(sa.text("SELECT elephant_secure_graph(:g, :t)"), {"g": graph, "t": tenant})


def _verify_key(app: str) -> None:
    # A key's use is recorded at most once a minute (last_used_at), and once an hour per
    # key as a key.used audit entry, as elephant_touch_key did.
    op.execute(
        """
        CREATE FUNCTION elephant_verify_key(p_prefix text, p_secret_hash text, p_client text)
        RETURNS TABLE (id uuid, name text, tenant_id text, scopes text[],
                       expires_at timestamptz, revoked_at timestamptz)
        LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
        DECLARE
            k api_keys;
        BEGIN
            SELECT * INTO k FROM api_keys AS a WHERE a.prefix = p_prefix;
            IF NOT FOUND OR p_secret_hash IS NULL OR k.secret_hash <> p_secret_hash THEN
                RETURN;
            END IF;
            IF k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
               AND (k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute') THEN
                IF k.last_used_at IS NULL
                   OR date_trunc('hour', k.last_used_at) < date_trunc('hour', now()) THEN
                    INSERT INTO audit_log (tenant_id, key_prefix, action, target, outcome, client)
                    VALUES (k.tenant_id, k.prefix, 'key.used', k.prefix, 'ok',
                            left(p_client, 100));
                END IF;
                UPDATE api_keys AS a SET last_used_at = now() WHERE a.id = k.id;
            END IF;
            RETURN QUERY SELECT k.id, k.name, k.tenant_id, k.scopes, k.expires_at, k.revoked_at;
        END
        $$
        """
    )
    op.execute("REVOKE ALL ON FUNCTION elephant_verify_key(text, text, text) FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION elephant_verify_key(text, text, text) TO {app}")
    op.execute(
        "COMMENT ON FUNCTION elephant_verify_key(text, text, text) IS 'The one way the app role "
        "reads api_keys: the reach (name, tenant, scopes, expiry, revocation) of the key with "
        "this prefix, only when p_secret_hash is its hash; records its use. Never the hash.'"
    )
    op.execute("DROP FUNCTION elephant_lookup_key(text)")
    op.execute("DROP FUNCTION elephant_touch_key(uuid, text)")


def _console_sign_in(app: str) -> None:
    op.execute(
        """
        CREATE FUNCTION elephant_console_sign_in(p_token_hash text, p_prefix text,
                                                 p_secret_hash text, p_ttl_seconds integer,
                                                 p_client text)
        RETURNS timestamptz
        LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
        DECLARE
            k api_keys;
            v_expires timestamptz;
        BEGIN
            IF p_ttl_seconds IS NULL OR p_ttl_seconds < 60 OR p_ttl_seconds > 2592000 THEN
                RAISE EXCEPTION 'session length must be 60..2592000 seconds, got %',
                      p_ttl_seconds USING ERRCODE = '22023';
            END IF;
            IF p_token_hash IS NULL OR p_token_hash !~ '^[0-9a-f]{64}$' THEN
                RAISE EXCEPTION 'the session token hash must be 64 hex digits'
                      USING ERRCODE = '22023';
            END IF;
            SELECT * INTO k FROM api_keys AS a WHERE a.prefix = p_prefix;
            IF NOT FOUND OR p_secret_hash IS NULL OR k.secret_hash <> p_secret_hash
               OR k.revoked_at IS NOT NULL OR (k.expires_at IS NOT NULL AND k.expires_at <= now())
               OR NOT ('read' = ANY (k.scopes)) THEN
                INSERT INTO audit_log (tenant_id, key_prefix, action, target, outcome, client)
                VALUES (k.tenant_id, left(p_prefix, 32), 'console.sign_in', left(p_prefix, 32),
                        'denied', left(p_client, 100));
                RETURN NULL;
            END IF;
            DELETE FROM console_sessions WHERE expires_at <= now();
            INSERT INTO console_sessions (token_hash, key_id, expires_at, client)
            VALUES (p_token_hash, k.id, now() + make_interval(secs => p_ttl_seconds),
                    left(p_client, 100))
            RETURNING expires_at INTO v_expires;
            INSERT INTO audit_log (tenant_id, key_prefix, action, target, outcome, client, detail)
            VALUES (k.tenant_id, k.prefix, 'console.sign_in', k.prefix, 'ok', left(p_client, 100),
                    jsonb_build_object('expires_at', v_expires));
            RETURN v_expires;
        END
        $$
        """
    )
    function = "elephant_console_sign_in(text, text, text, integer, text)"
    op.execute(f"REVOKE ALL ON FUNCTION {function} FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION {function} TO {app}")
    op.execute(
        f"COMMENT ON FUNCTION {function} IS 'Open a console session for the key with this "
        "prefix, only when p_secret_hash is its hash and it is live with the read scope; "
        "every sign-in (and refusal) is written to audit_log. Returns when it expires, or "
        "NULL when refused.'"
    )
    op.execute("DROP FUNCTION elephant_console_open(text, uuid, integer, text)")


# ---------------------------------------------------------------------------- downgrade


def downgrade() -> None:
    app, group_name = _roles()
    group = _quote(group_name)
    op.execute(_OLD_CONSOLE_OPEN)
    op.execute(_OLD_LOOKUP_KEY)
    op.execute(_OLD_TOUCH_KEY)
    for function in (
        "elephant_console_open(text, uuid, integer, text)",
        "elephant_lookup_key(text)",
        "elephant_touch_key(uuid, text)",
    ):
        op.execute(f"REVOKE ALL ON FUNCTION {function} FROM PUBLIC")
        op.execute(f"GRANT EXECUTE ON FUNCTION {function} TO {app}")
    op.execute("DROP FUNCTION IF EXISTS elephant_console_sign_in(text, text, text, integer, text)")
    op.execute("DROP FUNCTION IF EXISTS elephant_verify_key(text, text, text)")

    bind = op.get_bind()
    for graph, _ in _existing_graphs():
        tables = bind.execute(
            sa.text(
                "SELECT c.relname FROM pg_class AS c JOIN pg_namespace AS n "
                "ON n.oid = c.relnamespace WHERE n.nspname = :g AND c.relkind IN ('r', 'p')"
            ),
            {"g": graph},
        ).scalars()
        for table in tables:
            target = f"{_quote(graph)}.{_quote(table)}"
            op.execute(f"DROP POLICY IF EXISTS analyst_read ON {target}")
            op.execute(f"DROP POLICY IF EXISTS analyst_only ON {target}")
            op.execute(f"REVOKE ALL ON {target} FROM {group}")
        op.execute(f"REVOKE ALL ON SCHEMA {_quote(graph)} FROM {group}")
    op.execute(_secure_graph_function(False, group_name))

    for view in VIEWS:
        op.execute(f"REVOKE ALL ON {view} FROM {group}")
    for table in ("tenants", *TENANT_TABLES):
        op.execute(f"DROP POLICY IF EXISTS analyst_read ON {table}")
        op.execute(f"DROP POLICY IF EXISTS analyst_only ON {table}")
        op.execute(f"REVOKE ALL ON {table} FROM {group}")
    # Analyst login roles are cluster-wide: the ones this database made are dropped with it.
    roles = bind.execute(sa.text("SELECT role_name FROM analysts")).scalars().all()
    op.execute("DROP TABLE IF EXISTS analyst_grants")
    op.execute("DROP TABLE IF EXISTS analysts")
    for role in roles:
        op.execute(f"DROP ROLE IF EXISTS {_quote(role)}")
    op.execute(f"REVOKE ALL ON SCHEMA public FROM {group}")
    if bind.execute(sa.text("SELECT to_regnamespace('ag_catalog')")).scalar() is not None:
        op.execute(f"REVOKE ALL ON SCHEMA ag_catalog FROM {group}")
    op.execute(
        "UPDATE elephant_meta SET schema_version = '0014_tenant_vectors', updated_at = now()"
    )


_OLD_LOOKUP_KEY = """
CREATE FUNCTION elephant_lookup_key(p_prefix text)
RETURNS TABLE (id uuid, secret_hash text, name text, tenant_id text, scopes text[],
               expires_at timestamptz, revoked_at timestamptz, last_used_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT k.id, k.secret_hash, k.name, k.tenant_id, k.scopes, k.expires_at,
           k.revoked_at, k.last_used_at
      FROM api_keys AS k WHERE k.prefix = p_prefix
$$
"""

_OLD_TOUCH_KEY = """
CREATE FUNCTION elephant_touch_key(p_id uuid, p_client text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    k api_keys;
BEGIN
    SELECT * INTO k FROM api_keys WHERE id = p_id AND revoked_at IS NULL FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF k.last_used_at IS NULL
       OR date_trunc('hour', k.last_used_at) < date_trunc('hour', now()) THEN
        INSERT INTO audit_log (tenant_id, key_prefix, action, target, outcome, client)
        VALUES (k.tenant_id, k.prefix, 'key.used', k.prefix, 'ok', left(p_client, 100));
    END IF;
    UPDATE api_keys SET last_used_at = now() WHERE id = p_id;
END
$$
"""

_OLD_CONSOLE_OPEN = """
CREATE FUNCTION elephant_console_open(p_token_hash text, p_key_id uuid,
                                      p_ttl_seconds integer, p_client text)
RETURNS timestamptz
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    v_expires timestamptz;
BEGIN
    IF p_ttl_seconds IS NULL OR p_ttl_seconds < 60 OR p_ttl_seconds > 2592000 THEN
        RAISE EXCEPTION 'session length must be 60..2592000 seconds, got %',
              p_ttl_seconds USING ERRCODE = '22023';
    END IF;
    DELETE FROM console_sessions WHERE expires_at <= now();
    INSERT INTO console_sessions (token_hash, key_id, expires_at, client)
    VALUES (p_token_hash, p_key_id, now() + make_interval(secs => p_ttl_seconds),
            left(p_client, 100))
    RETURNING expires_at INTO v_expires;
    RETURN v_expires;
END
$$
"""
