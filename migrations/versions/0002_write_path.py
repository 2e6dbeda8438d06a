"""Write path: admission log, job queue, contradictions, LLM usage, feedback.

Revision ID: 0002_write_path
Revises: 0001_foundation
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import context, op

revision = "0002_write_path"
down_revision = "0001_foundation"
branch_labels = None
depends_on = None

TENANT_SETTING = "elephant.tenant_id"
NEW_TABLES = ("admission_log", "jobs", "contradictions", "llm_usage", "feedback")


def _role() -> str:
    return '"' + str(context.config.attributes["app_role"]).replace('"', '""') + '"'


def upgrade() -> None:
    op.execute(
        "ALTER TABLE facts ADD COLUMN importance real NOT NULL DEFAULT 50 "
        "CHECK (importance BETWEEN 0 AND 100)"
    )
    op.execute("ALTER TABLE facts ADD COLUMN content_hash text")
    op.execute("CREATE UNIQUE INDEX facts_tenant_hash ON facts (tenant_id, content_hash)")
    # A stored lower-case key, not an index on lower(subject): under row-level security
    # a query's non-leakproof functions (lower) run after the policy and cannot drive
    # an index scan, while a plain text equality can.
    op.execute(
        "ALTER TABLE facts ADD COLUMN subject_key text GENERATED ALWAYS AS (lower(subject)) STORED"
    )
    op.execute(
        "CREATE INDEX facts_tenant_subject_active ON facts (tenant_id, subject_key) "
        "WHERE status = 'active'"
    )

    op.execute(
        """
        CREATE TABLE admission_log (
            id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            tenant_id    text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            memory_id    uuid REFERENCES memories (id) ON DELETE SET NULL,
            kind         text NOT NULL,
            source       text NOT NULL,
            text_preview text NOT NULL,
            content_hash text NOT NULL,
            relevance    real,
            novelty      real,
            specificity  real,
            composite    real,
            threshold    real,
            decision     text NOT NULL CHECK (decision IN ('accepted', 'rejected', 'forced', 'duplicate')),
            reason       text NOT NULL,
            scorer       text NOT NULL,
            created_at   timestamptz NOT NULL DEFAULT now()
        )
        """
    )
    op.execute(
        "CREATE INDEX admission_log_tenant_created ON admission_log (tenant_id, created_at DESC)"
    )

    op.execute(
        """
        CREATE TABLE jobs (
            id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            tenant_id    text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            kind         text NOT NULL,
            payload      jsonb NOT NULL DEFAULT '{}'::jsonb,
            status       text NOT NULL DEFAULT 'queued'
                         CHECK (status IN ('queued', 'running', 'done', 'failed')),
            attempts     integer NOT NULL DEFAULT 0,
            max_attempts integer NOT NULL DEFAULT 5,
            run_after    timestamptz NOT NULL DEFAULT now(),
            last_error   text,
            locked_by    text,
            locked_at    timestamptz,
            created_at   timestamptz NOT NULL DEFAULT now(),
            updated_at   timestamptz NOT NULL DEFAULT now(),
            finished_at  timestamptz
        )
        """
    )
    op.execute(
        "CREATE INDEX jobs_claimable ON jobs (run_after, id) WHERE status IN ('queued', 'running')"
    )
    op.execute("CREATE INDEX jobs_tenant_status ON jobs (tenant_id, status)")

    op.execute(
        """
        CREATE TABLE contradictions (
            id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            tenant_id     text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            older_fact_id uuid NOT NULL REFERENCES facts (id) ON DELETE CASCADE,
            newer_fact_id uuid NOT NULL REFERENCES facts (id) ON DELETE CASCADE,
            detector      text NOT NULL,
            score         real NOT NULL,
            reason        text NOT NULL,
            created_at    timestamptz NOT NULL DEFAULT now(),
            UNIQUE (older_fact_id, newer_fact_id)
        )
        """
    )
    op.execute(
        "CREATE INDEX contradictions_tenant_created ON contradictions (tenant_id, created_at DESC)"
    )

    op.execute(
        """
        CREATE TABLE llm_usage (
            id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            tenant_id   text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            operation   text NOT NULL,
            provider    text NOT NULL,
            model       text NOT NULL,
            tokens_in   integer NOT NULL DEFAULT 0,
            tokens_out  integer NOT NULL DEFAULT 0,
            latency_ms  real NOT NULL DEFAULT 0,
            attempts    integer NOT NULL DEFAULT 1,
            ok          boolean NOT NULL,
            error       text,
            created_at  timestamptz NOT NULL DEFAULT now()
        )
        """
    )
    op.execute("CREATE INDEX llm_usage_tenant_created ON llm_usage (tenant_id, created_at DESC)")

    op.execute(
        """
        CREATE TABLE feedback (
            id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            tenant_id        text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            memory_id        uuid REFERENCES memories (id) ON DELETE CASCADE,
            fact_id          uuid REFERENCES facts (id) ON DELETE CASCADE,
            helpful          boolean NOT NULL,
            delta            real NOT NULL,
            importance_after real NOT NULL,
            created_at       timestamptz NOT NULL DEFAULT now(),
            CHECK ((memory_id IS NULL) <> (fact_id IS NULL))
        )
        """
    )

    role = _role()
    setting = f"current_setting('{TENANT_SETTING}', true)"
    for table in NEW_TABLES:
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {role}")
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        if table != "jobs":
            # jobs is not forced: the owner-run claim function below must see every
            # tenant's queue; the app role itself stays confined to its tenant.
            op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_isolation ON {table} "
            f"USING (tenant_id = {setting}) WITH CHECK (tenant_id = {setting})"
        )

    # Workers serve every tenant: they claim through this owner-run function, which
    # returns only ids and routing data, then do the work inside the job's tenant.
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
    op.execute(f"GRANT EXECUTE ON FUNCTION elephant_claim_jobs(text, integer, integer) TO {role}")
    op.execute("UPDATE elephant_meta SET schema_version = '0002_write_path', updated_at = now()")


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS elephant_claim_jobs(text, integer, integer)")
    for table in reversed(NEW_TABLES):
        op.execute(f"DROP TABLE IF EXISTS {table}")
    op.execute("DROP INDEX IF EXISTS facts_tenant_subject_active")
    op.execute("ALTER TABLE facts DROP COLUMN IF EXISTS subject_key")
    op.execute("DROP INDEX IF EXISTS facts_tenant_hash")
    op.execute("ALTER TABLE facts DROP COLUMN IF EXISTS content_hash")
    op.execute("ALTER TABLE facts DROP COLUMN IF EXISTS importance")
    op.execute("UPDATE elephant_meta SET schema_version = '0001_foundation', updated_at = now()")
