"""Access control: API keys, audit log, a worker role for the queue, graph isolation.

- `api_keys`: a key is stored as its prefix and the SHA-256 of the whole key;
  the app role reads it only through `elephant_lookup_key(prefix)` and records
  a verified key's use through `elephant_touch_key(id, client)`.
- `audit_log`: admin actions, key lifecycle, denied requests and erasures; the
  app role writes it only through `elephant_audit(...)` and cannot read it.
- Jobs: a claim records `lease_expires_at`; a running job is claimable again
  only after that instant, whatever lease the next caller asks for, and only
  the worker role may call `elephant_claim_jobs`.
- Graphs: every table of a tenant's AGE graph gets row-level security bound to
  that tenant (`elephant_secure_graph`), so the app role sees none of another
  tenant's vertices or edges, through SQL or `cypher()`. Deleting a tenant
  drops its graph (trigger), so nothing of it can reappear.

Revision ID: 0006_access_control
Revises: 0005_graph
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision = "0006_access_control"
down_revision = "0005_graph"
branch_labels = None
depends_on = None

TENANT_SETTING = "elephant.tenant_id"
DEFAULT_LEASE_SECONDS = 600


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _worker_role_name() -> str:
    return str(context.config.attributes.get("worker_role", "elephant_worker"))


def _roles() -> tuple[str, str]:
    return _quote(str(context.config.attributes["app_role"])), _quote(_worker_role_name())


def upgrade() -> None:
    app, worker = _roles()
    _keys_and_audit(app)
    _worker_queue(app, worker)
    _graph_isolation()
    op.execute(
        "UPDATE elephant_meta SET schema_version = '0006_access_control', updated_at = now()"
    )


def _keys_and_audit(app: str) -> None:
    op.execute(
        """
        CREATE TABLE api_keys (
            id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
            prefix       text NOT NULL UNIQUE CHECK (prefix ~ '^[a-z0-9]{8,32}$'),
            secret_hash  text NOT NULL CHECK (secret_hash ~ '^[0-9a-f]{64}$'),
            name         text NOT NULL DEFAULT '' CHECK (length(name) <= 200),
            tenant_id    text CHECK (tenant_id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
            scopes       text[] NOT NULL
                         CHECK (cardinality(scopes) > 0
                                AND scopes <@ ARRAY['read', 'write', 'admin']::text[]),
            created_by   text NOT NULL DEFAULT 'cli',
            created_at   timestamptz NOT NULL DEFAULT now(),
            expires_at   timestamptz,
            last_used_at timestamptz,
            revoked_at   timestamptz,
            -- only an admin key may serve every tenant (tenant_id NULL)
            CHECK (tenant_id IS NOT NULL OR 'admin' = ANY (scopes))
        )
        """
    )
    op.execute("CREATE INDEX api_keys_tenant ON api_keys (tenant_id)")
    op.execute("ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY")
    op.execute(
        """
        CREATE FUNCTION elephant_lookup_key(p_prefix text)
        RETURNS TABLE (id uuid, secret_hash text, name text, tenant_id text, scopes text[],
                       expires_at timestamptz, revoked_at timestamptz, last_used_at timestamptz)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
            SELECT k.id, k.secret_hash, k.name, k.tenant_id, k.scopes, k.expires_at,
                   k.revoked_at, k.last_used_at
              FROM api_keys AS k WHERE k.prefix = p_prefix
        $$
        """
    )
    op.execute(
        """
        CREATE TABLE audit_log (
            id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            at         timestamptz NOT NULL DEFAULT now(),
            tenant_id  text,
            key_prefix text,
            action     text NOT NULL,
            target     text NOT NULL DEFAULT '',
            outcome    text NOT NULL CHECK (outcome IN ('ok', 'denied', 'failed')),
            client     text,
            detail     jsonb NOT NULL DEFAULT '{}'::jsonb
        )
        """
    )
    op.execute("CREATE INDEX audit_log_tenant_at ON audit_log (tenant_id, at DESC)")
    op.execute("CREATE INDEX audit_log_at ON audit_log (at DESC)")
    op.execute("ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY")
    op.execute(
        """
        CREATE FUNCTION elephant_audit(p_tenant text, p_key_prefix text, p_action text,
                                       p_target text, p_outcome text, p_client text,
                                       p_detail jsonb)
        RETURNS void
        LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
            INSERT INTO audit_log (tenant_id, key_prefix, action, target, outcome, client, detail)
            VALUES (p_tenant, p_key_prefix, left(p_action, 100), left(coalesce(p_target, ''), 500),
                    p_outcome, left(p_client, 100), coalesce(p_detail, '{}'::jsonb))
        $$
        """
    )
    # After a key was verified: its last use (the caller asks at most once a minute) and,
    # once an hour per key, a "key.used" entry in the audit log.
    op.execute(
        """
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
    )
    for function in (
        "elephant_lookup_key(text)",
        "elephant_touch_key(uuid, text)",
        "elephant_audit(text, text, text, text, text, text, jsonb)",
    ):
        op.execute(f"REVOKE ALL ON FUNCTION {function} FROM PUBLIC")
        op.execute(f"GRANT EXECUTE ON FUNCTION {function} TO {app}")


def _worker_queue(app: str, worker: str) -> None:
    bind = op.get_bind()
    op.execute("ALTER TABLE jobs ADD COLUMN lease_expires_at timestamptz")
    op.execute(
        "UPDATE jobs SET lease_expires_at = locked_at + make_interval(secs => "
        f"{DEFAULT_LEASE_SECONDS}) WHERE status = 'running'"
    )
    exists = bind.execute(
        sa.text("SELECT 1 FROM pg_roles WHERE rolname = :r"), {"r": _worker_role_name()}
    ).first()
    if not exists:
        op.execute(f"CREATE ROLE {worker} NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE")
    superuser = bind.execute(sa.text("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"))
    if not superuser.scalar():
        op.execute(f"GRANT {worker} TO CURRENT_USER")  # so the migrator can SET ROLE to it
    op.execute(f"GRANT USAGE ON SCHEMA public TO {worker}")

    op.execute("DROP FUNCTION elephant_claim_jobs(text, integer, integer)")
    op.execute(
        """
        CREATE FUNCTION elephant_claim_jobs(p_worker text, p_limit integer, p_lease_seconds integer)
        RETURNS TABLE (id bigint, tenant_id text, kind text, payload jsonb, attempts integer,
                       max_attempts integer)
        LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
        BEGIN
            IF p_lease_seconds IS NULL OR p_lease_seconds < 30 OR p_lease_seconds > 86400 THEN
                RAISE EXCEPTION 'lease must be 30..86400 seconds, got %', p_lease_seconds
                      USING ERRCODE = '22023';
            END IF;
            IF p_limit IS NULL OR p_limit < 1 OR p_limit > 1000 THEN
                RAISE EXCEPTION 'limit must be 1..1000, got %', p_limit USING ERRCODE = '22023';
            END IF;
            RETURN QUERY
            UPDATE jobs AS j
               SET status = 'running', attempts = j.attempts + 1, locked_by = left(p_worker, 200),
                   locked_at = now(), lease_expires_at = now() + make_interval(secs => p_lease_seconds),
                   updated_at = now()
             WHERE j.id IN (
                   SELECT c.id FROM jobs AS c
                    WHERE (c.status = 'queued' AND c.run_after <= now())
                       OR (c.status = 'running' AND c.lease_expires_at < now())
                    ORDER BY c.run_after, c.id
                    LIMIT p_limit
                    FOR UPDATE SKIP LOCKED)
            RETURNING j.id, j.tenant_id, j.kind, j.payload, j.attempts, j.max_attempts;
        END
        $$
        """
    )
    # While a job runs its worker renews the lease (a heartbeat), so a short lease is safe
    # and the jobs of a dead worker come back within a minute.
    op.execute(
        """
        CREATE FUNCTION elephant_renew_leases(p_worker text, p_ids bigint[], p_lease_seconds integer)
        RETURNS integer
        LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
            WITH renewed AS (
                UPDATE jobs
                   SET lease_expires_at = now() + make_interval(
                           secs => least(greatest(p_lease_seconds, 30), 86400))
                 WHERE id = ANY (p_ids) AND locked_by = p_worker AND status = 'running'
                RETURNING 1)
            SELECT count(*)::integer FROM renewed
        $$
        """
    )
    # A worker that shuts down hands its unfinished jobs back at once (the attempt is not
    # counted: it did not fail).
    op.execute(
        """
        CREATE FUNCTION elephant_release_jobs(p_worker text, p_ids bigint[])
        RETURNS integer
        LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
            WITH released AS (
                UPDATE jobs
                   SET status = 'queued', attempts = greatest(attempts - 1, 0), locked_by = NULL,
                       locked_at = NULL, lease_expires_at = NULL, updated_at = now()
                 WHERE id = ANY (p_ids) AND locked_by = p_worker AND status = 'running'
                RETURNING 1)
            SELECT count(*)::integer FROM released
        $$
        """
    )
    for function in (
        "elephant_claim_jobs(text, integer, integer)",
        "elephant_renew_leases(text, bigint[], integer)",
        "elephant_release_jobs(text, bigint[])",
    ):
        op.execute(f"REVOKE ALL ON FUNCTION {function} FROM PUBLIC")
        op.execute(f"GRANT EXECUTE ON FUNCTION {function} TO {worker}")


def _graph_isolation() -> None:
    # Row-level security on every table of one tenant's graph, keyed on the tenant
    # setting like every other table. Run by the migrator (owner of the graph schemas)
    # here and whenever a graph is provisioned; idempotent.
    op.execute(
        f"""
        CREATE FUNCTION elephant_secure_graph(p_graph text, p_tenant text)
        RETURNS integer
        LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, public AS $$
        DECLARE
            t record;
            secured integer := 0;
        BEGIN
            IF p_tenant !~ '^[a-z0-9][a-z0-9_-]{{0,62}}$' THEN
                RAISE EXCEPTION 'invalid tenant id %', p_tenant USING ERRCODE = '22023';
            END IF;
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
                secured := secured + 1;
            END LOOP;
            RETURN secured;
        END
        $$
        """
    )
    op.execute("REVOKE ALL ON FUNCTION elephant_secure_graph(text, text) FROM PUBLIC")
    # The graph name is derived from the tenant id exactly as the application does
    # (app/services/graph/age.py: graph_name), so a graph left without its `graphs`
    # row is found too.
    op.execute(
        """
        CREATE FUNCTION elephant_graph_name(p_tenant text) RETURNS text
        LANGUAGE sql IMMUTABLE STRICT AS $$
            SELECT 'g_' || left(replace(p_tenant, '-', '_'), 40) || '_'
                   || left(encode(sha256(convert_to(p_tenant, 'UTF8')), 'hex'), 8)
        $$
        """
    )
    op.execute(
        """
        CREATE FUNCTION elephant_drop_tenant_graph() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
        DECLARE
            graph text := elephant_graph_name(OLD.id);
        BEGIN
            IF to_regclass('ag_catalog.ag_graph') IS NOT NULL THEN
                IF EXISTS (SELECT 1 FROM ag_catalog.ag_graph AS g WHERE g.name::text = graph) THEN
                    PERFORM ag_catalog.drop_graph(graph::name, true);
                END IF;
            END IF;
            RETURN OLD;
        END
        $$
        """
    )
    op.execute("REVOKE ALL ON FUNCTION elephant_drop_tenant_graph() FROM PUBLIC")
    op.execute(
        "CREATE TRIGGER tenants_drop_graph BEFORE DELETE ON tenants "
        "FOR EACH ROW EXECUTE FUNCTION elephant_drop_tenant_graph()"
    )
    bind = op.get_bind()
    graphs = bind.execute(sa.text("SELECT tenant_id, graph_name FROM graphs")).all()
    for tenant, graph in graphs:
        bind.execute(sa.text("SELECT elephant_secure_graph(:g, :t)"), {"g": graph, "t": tenant})


def downgrade() -> None:
    app, worker = _roles()
    bind = op.get_bind()
    graphs = bind.execute(sa.text("SELECT graph_name FROM graphs")).scalars().all()
    for graph in graphs:
        tables = bind.execute(
            sa.text(
                "SELECT c.relname FROM pg_class AS c JOIN pg_namespace AS n "
                "ON n.oid = c.relnamespace WHERE n.nspname = :g AND c.relkind IN ('r', 'p')"
            ),
            {"g": graph},
        ).scalars()
        for table in tables:
            target = f"{_quote(graph)}.{_quote(table)}"
            op.execute(f"DROP POLICY IF EXISTS tenant_isolation ON {target}")
            op.execute(f"ALTER TABLE {target} NO FORCE ROW LEVEL SECURITY")
            op.execute(f"ALTER TABLE {target} DISABLE ROW LEVEL SECURITY")
    op.execute("DROP TRIGGER IF EXISTS tenants_drop_graph ON tenants")
    op.execute("DROP FUNCTION IF EXISTS elephant_drop_tenant_graph()")
    op.execute("DROP FUNCTION IF EXISTS elephant_graph_name(text)")
    op.execute("DROP FUNCTION IF EXISTS elephant_secure_graph(text, text)")

    op.execute("DROP FUNCTION IF EXISTS elephant_release_jobs(text, bigint[])")
    op.execute("DROP FUNCTION IF EXISTS elephant_renew_leases(text, bigint[], integer)")
    op.execute("DROP FUNCTION elephant_claim_jobs(text, integer, integer)")
    op.execute(
        """
        CREATE FUNCTION elephant_claim_jobs(p_worker text, p_limit integer, p_lease_seconds integer)
        RETURNS TABLE (id bigint, tenant_id text, kind text, payload jsonb, attempts integer,
                       max_attempts integer)
        LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
            UPDATE jobs AS j
               SET status = 'running', attempts = j.attempts + 1, locked_by = p_worker,
                   locked_at = now(), updated_at = now()
             WHERE j.id IN (
                   SELECT c.id FROM jobs AS c
                    WHERE (c.status = 'queued' AND c.run_after <= now())
                       OR (c.status = 'running'
                           AND c.locked_at < now() - make_interval(secs => p_lease_seconds))
                    ORDER BY c.run_after, c.id
                    LIMIT p_limit
                    FOR UPDATE SKIP LOCKED)
            RETURNING j.id, j.tenant_id, j.kind, j.payload, j.attempts, j.max_attempts
        $$
        """
    )
    op.execute("REVOKE ALL ON FUNCTION elephant_claim_jobs(text, integer, integer) FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION elephant_claim_jobs(text, integer, integer) TO {app}")
    op.execute("ALTER TABLE jobs DROP COLUMN IF EXISTS lease_expires_at")
    # The worker role is cluster-wide and may serve other databases: keep it, drop its grants.
    op.execute(f"REVOKE ALL ON SCHEMA public FROM {worker}")

    op.execute("DROP FUNCTION IF EXISTS elephant_audit(text, text, text, text, text, text, jsonb)")
    op.execute("DROP TABLE IF EXISTS audit_log")
    op.execute("DROP FUNCTION IF EXISTS elephant_touch_key(uuid, text)")
    op.execute("DROP FUNCTION IF EXISTS elephant_lookup_key(text)")
    op.execute("DROP TABLE IF EXISTS api_keys")
    op.execute("UPDATE elephant_meta SET schema_version = '0005_graph', updated_at = now()")
