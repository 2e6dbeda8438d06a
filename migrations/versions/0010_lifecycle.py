"""Memory lifecycle: activation, dormancy, maintenance runs and their schedule.

- `elephant_activation(...)`: how alive a memory or fact is, computed when read from
  its importance, when it was last stored, seen or used, and how often it was used:
  strength x 0.5^(age / half-life), the half-life longer for important rows. Nothing
  is written to keep it current (no decay job rewrites rows); search may add it as a
  prior (lifecycle.search_weight).
- `memories.dormant_at`, `facts.dormant_at`: set by the decay job when a row's
  activation fell below lifecycle.dormant_below, cleared when it rose again (it was
  used). Nothing is hidden or deleted by decay.
- `maintenance_runs`: one row per maintenance run (decay, dedup sweep, backfill,
  retention, reembed) with its report, under row-level security like every tenant table.
- `jobs_one_maintenance`: at most one queued or running job per tenant and
  maintenance kind (`maintain_*`), so two workers scheduling at once queue it once.
- `elephant_maintenance_tenants()` and `elephant_schedule_maintenance(kind, every,
  attempts)`: the worker role (which reads no tenant's rows) lists tenant ids and
  queues the maintenance jobs that are due. Both run as their owner (the migrator);
  a policy lets the owner read tenant ids only while inside them (a function-level
  setting), should row-level security be forced on it (a non-superuser migrator).

Revision ID: 0010_lifecycle
Revises: 0009_keyword_rls
Create Date: 2026-12-10
"""

from __future__ import annotations

from alembic import context, op

revision = "0010_lifecycle"
down_revision = "0009_keyword_rls"
branch_labels = None
depends_on = None

TENANT_SETTING = "elephant.tenant_id"
SCOPE_SETTING = "elephant.maintenance_scope"
ACTIVATION = (
    "elephant_activation(real, timestamptz, integer, timestamptz, double precision, "
    "double precision, double precision)"
)
TENANTS_FUNCTION = "elephant_maintenance_tenants()"
SCHEDULE_FUNCTION = "elephant_schedule_maintenance(text, integer, integer)"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _roles() -> tuple[str, str]:
    attributes = context.config.attributes
    return (
        _quote(str(attributes["app_role"])),
        _quote(str(attributes.get("worker_role", "elephant_worker"))),
    )


def upgrade() -> None:
    app, worker = _roles()
    for table in ("memories", "facts"):
        op.execute(f"ALTER TABLE {table} ADD COLUMN dormant_at timestamptz")
        op.execute(
            f"COMMENT ON COLUMN {table}.dormant_at IS 'Set by the decay job when the row''s "
            "activation (elephant_activation) fell below lifecycle.dormant_below; cleared when "
            "it rose again. Nothing is hidden or deleted for it.'"
        )

    # Immutable (the instant is an argument), so it is safe in any query; the exponent
    # is held to 0-200 half-lives (a future date counts as now; 1900 cannot underflow).
    op.execute(
        """
        CREATE FUNCTION elephant_activation(
            p_importance real, p_anchor timestamptz, p_access_count integer,
            p_at timestamptz, p_half_life_days double precision,
            p_importance_factor double precision, p_access_boost double precision)
        RETURNS double precision
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        SET search_path = pg_catalog, public AS $$
            SELECT least(1.0, greatest(0.0, coalesce(p_importance, 50)::float8 / 100.0)
                              * (1.0 + greatest(0.0, p_access_boost)
                                       * ln(1.0 + greatest(coalesce(p_access_count, 0), 0))))
                   * power(0.5, least(200.0, greatest(0.0,
                         extract(epoch FROM p_at - coalesce(p_anchor, p_at)) / 86400.0
                         / (greatest(p_half_life_days, 0.001)
                            * power(greatest(p_importance_factor, 1.0),
                                    (least(100, greatest(0, coalesce(p_importance, 50))) - 50)
                                    / 50.0)))))
        $$
        """
    )
    op.execute(
        f"COMMENT ON FUNCTION {ACTIVATION} IS 'How alive a memory or fact is, 0-1: "
        "min(1, importance/100 x (1 + access_boost x ln(1 + access_count))) x 0.5^(age / "
        "half-life), age from the anchor (when it was last stored, seen or used) to p_at, the "
        "half-life x importance_factor^((importance - 50) / 50): longer for important rows. "
        "E.g. elephant_activation(importance, greatest(created_at, last_seen_at, "
        "last_accessed_at), access_count, now(), 23, 3, 0.25) (migration 0010).'"
    )

    op.execute(
        """
        CREATE TABLE maintenance_runs (
            id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            tenant_id   text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            kind        text NOT NULL CHECK (kind ~ '^[a-z_]{1,40}$'),
            job_id      bigint,
            triggered_by text NOT NULL CHECK (triggered_by IN ('schedule', 'cli', 'api')),
            started_at  timestamptz NOT NULL,
            finished_at timestamptz NOT NULL DEFAULT now(),
            report      jsonb NOT NULL DEFAULT '{}'::jsonb
        )
        """
    )
    op.execute(
        "CREATE INDEX maintenance_runs_tenant_kind ON maintenance_runs "
        "(tenant_id, kind, finished_at DESC)"
    )
    op.execute(f"GRANT SELECT, INSERT ON maintenance_runs TO {app}")
    op.execute("ALTER TABLE maintenance_runs ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE maintenance_runs FORCE ROW LEVEL SECURITY")
    setting = f"current_setting('{TENANT_SETTING}', true)"
    op.execute(
        "CREATE POLICY tenant_isolation ON maintenance_runs "
        f"USING (tenant_id = {setting}) WITH CHECK (tenant_id = {setting})"
    )
    for column, text in (
        ("", "One row per maintenance run of a tenant (decay, dedup, backfill, retention, "
             "reembed) with what it did; dry runs are not recorded."),
        (".id", "Run number."),
        (".tenant_id", "Tenant the run maintained."),
        (".kind", "decay, dedup, backfill, retention or reembed."),
        (".job_id", "The queue job that ran it (jobs.id; the job row may be gone)."),
        (".triggered_by", "schedule (the worker queued it), cli (elephant maintain) or api."),
        (".started_at", "When the run started."),
        (".finished_at", "When the run committed."),
        (".report", "What it did: counts per action, and for retention the sources and "
                    "cut-off dates (never memory text)."),
    ):  # fmt: skip
        target = "TABLE maintenance_runs" if not column else f"COLUMN maintenance_runs{column}"
        op.execute(f"COMMENT ON {target} IS '{text}'")

    # One queued or running maintenance job per tenant and kind: a second scheduler (or
    # `elephant maintain` while one waits) finds it instead of queueing another.
    op.execute(
        "CREATE UNIQUE INDEX jobs_one_maintenance ON jobs (tenant_id, kind) "
        "WHERE status IN ('queued', 'running') AND kind LIKE 'maintain\\_%'"
    )
    op.execute(
        "CREATE INDEX jobs_maintenance_created ON jobs (tenant_id, kind, created_at DESC) "
        "WHERE kind LIKE 'maintain\\_%'"
    )

    # The owner reads tenant ids only inside the functions below (they set the scope for
    # their query and put it back; a SET clause on a custom setting would need a superuser
    # to create): without it a non-superuser owner sees none, tenants being FORCE RLS.
    op.execute(
        "CREATE POLICY maintenance_scope ON tenants FOR SELECT TO CURRENT_USER "
        f"USING (current_setting('{SCOPE_SETTING}', true) = 'on')"
    )
    op.execute(
        f"""
        CREATE FUNCTION elephant_maintenance_tenants()
        RETURNS SETOF text
        LANGUAGE plpgsql STABLE SECURITY DEFINER
        SET search_path = pg_catalog, public AS $$
        DECLARE
            v_scope text := current_setting('{SCOPE_SETTING}', true);
        BEGIN
            PERFORM set_config('{SCOPE_SETTING}', 'on', true);
            RETURN QUERY SELECT id FROM tenants ORDER BY id;
            PERFORM set_config('{SCOPE_SETTING}', coalesce(v_scope, ''), true);
        END
        $$
        """
    )
    op.execute(
        f"""
        CREATE FUNCTION elephant_schedule_maintenance(
            p_kind text, p_every_seconds integer, p_max_attempts integer)
        RETURNS integer
        LANGUAGE plpgsql VOLATILE SECURITY DEFINER
        SET search_path = pg_catalog, public AS $$
        DECLARE
            v_added integer;
            v_scope text := current_setting('{SCOPE_SETTING}', true);
        BEGIN
            IF p_kind IS NULL OR p_kind !~ '^maintain_[a-z_]{{1,40}}$' THEN
                RAISE EXCEPTION 'not a maintenance job kind: %', p_kind USING ERRCODE = '22023';
            END IF;
            IF p_every_seconds IS NULL OR p_every_seconds < 60 THEN
                RAISE EXCEPTION 'interval must be at least 60 seconds, got %', p_every_seconds
                      USING ERRCODE = '22023';
            END IF;
            IF p_max_attempts IS NULL OR p_max_attempts < 1 OR p_max_attempts > 100 THEN
                RAISE EXCEPTION 'max attempts must be 1..100, got %', p_max_attempts
                      USING ERRCODE = '22023';
            END IF;
            -- One scheduler per kind at a time: a second one waits here, then (a new
            -- snapshot per statement) sees the jobs the first queued.
            PERFORM pg_advisory_xact_lock(hashtext('elephant_schedule_maintenance'),
                                          hashtext(p_kind));
            PERFORM set_config('{SCOPE_SETTING}', 'on', true);
            WITH added AS (
                INSERT INTO jobs (tenant_id, kind, payload, max_attempts)
                SELECT t.id, p_kind, '{{"trigger": "schedule"}}'::jsonb, p_max_attempts
                  FROM tenants AS t
                 WHERE NOT EXISTS (
                       SELECT 1 FROM jobs AS j
                        WHERE j.tenant_id = t.id AND j.kind = p_kind
                          AND (j.status IN ('queued', 'running')
                               OR j.created_at > now() - make_interval(secs => p_every_seconds)))
                ON CONFLICT DO NOTHING
                RETURNING 1)
            SELECT count(*)::integer INTO v_added FROM added;
            PERFORM set_config('{SCOPE_SETTING}', coalesce(v_scope, ''), true);
            RETURN v_added;
        END
        $$
        """
    )
    for function in (TENANTS_FUNCTION, SCHEDULE_FUNCTION):
        op.execute(f"REVOKE ALL ON FUNCTION {function} FROM PUBLIC")
        op.execute(f"GRANT EXECUTE ON FUNCTION {function} TO {worker}")
    op.execute(
        f"COMMENT ON FUNCTION {TENANTS_FUNCTION} IS 'Every tenant id, for the worker role "
        "(which reads no tenant rows) to run maintenance per tenant (migration 0010).'"
    )
    op.execute(
        f"COMMENT ON FUNCTION {SCHEDULE_FUNCTION} IS 'Queue a maintenance job of this kind "
        "(maintain_*) for every tenant that has none queued or running and none created in "
        "the last p_every_seconds; returns how many were queued. Serialised per kind by an "
        "advisory lock and the unique index jobs_one_maintenance (migration 0010).'"
    )
    op.execute("UPDATE elephant_meta SET schema_version = '0010_lifecycle', updated_at = now()")


def downgrade() -> None:
    op.execute(f"DROP FUNCTION IF EXISTS {SCHEDULE_FUNCTION}")
    op.execute(f"DROP FUNCTION IF EXISTS {TENANTS_FUNCTION}")
    op.execute("DROP POLICY IF EXISTS maintenance_scope ON tenants")
    op.execute("DROP INDEX IF EXISTS jobs_maintenance_created")
    op.execute("DROP INDEX IF EXISTS jobs_one_maintenance")
    op.execute("DROP TABLE IF EXISTS maintenance_runs")
    op.execute(f"DROP FUNCTION IF EXISTS {ACTIVATION}")
    for table in ("memories", "facts"):
        op.execute(f"ALTER TABLE {table} DROP COLUMN IF EXISTS dormant_at")
    op.execute("UPDATE elephant_meta SET schema_version = '0009_keyword_rls', updated_at = now()")
