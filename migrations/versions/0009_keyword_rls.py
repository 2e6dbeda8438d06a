"""Keyword lane indexes under row-level security: the tsvector lane reads through two functions.

Under row-level security Postgres evaluates the tenant policy before any condition
that is not leakproof, and `tsvector @@ tsquery` is not: so the planner may not use
`memories_tsv_gin` / `facts_tsv_gin` as an index condition for the app role, and the
keyword lane (pg_textsearch absent, e.g. on a managed Postgres) read every row of the
tenant. Here the lane reads through `elephant_keyword_memories(query)` and
`elephant_keyword_facts(query)`:

- SECURITY DEFINER, owned by `<app role>_keyword` (`elephant_app_keyword`): NOLOGIN,
  not a superuser, no BYPASSRLS, nobody's member (but a non-superuser migrator's, which
  must be to hand it the functions), no other rights than SELECT on the columns the
  lane ranks and filters by (not text, not embeddings) and USAGE on the schema;
- a policy `keyword_lane` gives that role every row for SELECT (USING true), so no
  policy qualifier stands before `@@` in the functions' plans and the GIN index is an
  index condition; each function applies the tenant explicitly instead:
  `tenant_id = current_setting('elephant.tenant_id', true)`, the same setting and
  comparison as the `tenant_isolation` policies (the same trust model: the app role
  sets that setting for the tenant it serves). Unset: no rows. plpgsql with custom
  plans, so each call is planned for its tenant's size and its query's words;
- they return each match's id and ts_rank_cd score plus the columns the lane's
  filters read (sql/retrieval/memory_filters.sql, sql/retrieval/fact_filters.sql), which the caller
  applies around the call, then orders and limits as before (the same rows, the same
  ranks); only the app role may execute them.

The role is cluster-wide (like the app role, after which it is named, so deployments
with their own app roles share nothing): created if missing, kept on downgrade (it
may serve other databases), its grants, policies and the functions dropped.

Revision ID: 0009_keyword_rls
Revises: 0008_relational_graph
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision = "0009_keyword_rls"
down_revision = "0008_relational_graph"
branch_labels = None
depends_on = None

TENANT_SETTING = "elephant.tenant_id"
# What each function reads: id, tenant, tsv, and the columns the lane's filters use.
MEMORY_COLUMNS = ("id", "tenant_id", "tsv", "kind", "source", "created_at", "event_at")
FACT_COLUMNS = (
    "id",
    "tenant_id",
    "tsv",
    "source",
    "created_at",
    "valid_from",
    "valid_to",
    "status",
    "expired_at",
)
FUNCTIONS = ("elephant_keyword_memories(text)", "elephant_keyword_facts(text)")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def keyword_role(app_role: str) -> str:
    """`<app role>_keyword`, within Postgres' 63 characters."""
    return f"{app_role[:55]}_keyword"


def upgrade() -> None:
    app_role = str(context.config.attributes["app_role"])
    app, name = _quote(app_role), keyword_role(app_role)
    role = _quote(name)
    bind = op.get_bind()
    exists = bind.execute(sa.text("SELECT 1 FROM pg_roles WHERE rolname = :r"), {"r": name}).first()
    if not exists:
        op.execute(
            f"CREATE ROLE {role} NOLOGIN NOINHERIT NOSUPERUSER NOBYPASSRLS NOCREATEDB "
            "NOCREATEROLE NOREPLICATION"
        )
    superuser = bind.execute(sa.text("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"))
    if not superuser.scalar():
        # A non-superuser migrator must be able to SET ROLE to it to hand it the functions.
        op.execute(f"GRANT {role} TO CURRENT_USER")
    op.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
    op.execute(f"GRANT SELECT ({', '.join(MEMORY_COLUMNS)}) ON memories TO {role}")
    op.execute(f"GRANT SELECT ({', '.join(FACT_COLUMNS)}) ON facts TO {role}")
    for table in ("memories", "facts"):
        op.execute(f"CREATE POLICY keyword_lane ON {table} FOR SELECT TO {role} USING (true)")

    # plpgsql, so the tenant reaches the planner as a value (v_tenant) and, with custom
    # plans forced, each call is planned for the tenant's size and the query's words:
    # the GIN index for a selective query, the tenant's own rows for a small tenant.
    setting = f"current_setting('{TENANT_SETTING}', true)"
    op.execute(
        f"""
        CREATE FUNCTION elephant_keyword_memories(p_query text)
        RETURNS TABLE (id uuid, score real, kind text, source text,
                       created_at timestamptz, event_at timestamptz)
        LANGUAGE plpgsql STABLE SECURITY DEFINER
        SET search_path = pg_catalog, public SET plan_cache_mode = force_custom_plan AS $$
        DECLARE
            v_tenant text := {setting};
        BEGIN
            RETURN QUERY
            SELECT m.id, ts_rank_cd(m.tsv, websearch_to_tsquery('english', p_query)),
                   m.kind, m.source, m.created_at, m.event_at
              FROM memories AS m
             WHERE m.tenant_id = v_tenant
               AND m.tsv @@ websearch_to_tsquery('english', p_query);
        END
        $$
        """
    )
    op.execute(
        f"""
        CREATE FUNCTION elephant_keyword_facts(p_query text)
        RETURNS TABLE (id uuid, score real, source text, created_at timestamptz,
                       valid_from timestamptz, valid_to timestamptz, status text,
                       expired_at timestamptz)
        LANGUAGE plpgsql STABLE SECURITY DEFINER
        SET search_path = pg_catalog, public SET plan_cache_mode = force_custom_plan AS $$
        DECLARE
            v_tenant text := {setting};
        BEGIN
            RETURN QUERY
            SELECT f.id, ts_rank_cd(f.tsv, websearch_to_tsquery('english', p_query)),
                   f.source, f.created_at, f.valid_from, f.valid_to, f.status, f.expired_at
              FROM facts AS f
             WHERE f.tenant_id = v_tenant
               AND f.tsv @@ websearch_to_tsquery('english', p_query);
        END
        $$
        """
    )
    # A new owner must be allowed to create in the schema (checked for a non-superuser
    # migrator): lent for the ALTER only, unless the role has it anyway (PUBLIC, < PG 15).
    lend = not bind.execute(
        sa.text("SELECT has_schema_privilege(:r, 'public', 'CREATE')"), {"r": name}
    ).scalar()
    if lend:
        op.execute(f"GRANT CREATE ON SCHEMA public TO {role}")
    for function in FUNCTIONS:
        op.execute(f"ALTER FUNCTION {function} OWNER TO {role}")
    if lend:
        op.execute(f"REVOKE CREATE ON SCHEMA public FROM {role}")
    for function, table in zip(FUNCTIONS, ("memories", "facts"), strict=True):
        op.execute(f"REVOKE ALL ON FUNCTION {function} FROM PUBLIC")
        op.execute(f"GRANT EXECUTE ON FUNCTION {function} TO {app}")
        op.execute(
            f"COMMENT ON FUNCTION {function} IS 'The keyword lane without pg_textsearch: the "
            f"{table} of the tenant in {TENANT_SETTING} that match websearch_to_tsquery(english, "
            "query), with their ts_rank_cd score and the columns the lane filters by. Owned by "
            f"{name}, to which no policy applies before @@, so the GIN index on tsv is "
            "used under row-level security (migration 0009).'"
        )
    op.execute("UPDATE elephant_meta SET schema_version = '0009_keyword_rls', updated_at = now()")


def downgrade() -> None:
    role = _quote(keyword_role(str(context.config.attributes["app_role"])))
    for function in FUNCTIONS:
        op.execute(f"DROP FUNCTION IF EXISTS {function}")
    for table in ("memories", "facts"):
        op.execute(f"DROP POLICY IF EXISTS keyword_lane ON {table}")
        op.execute(f"REVOKE ALL ON {table} FROM {role}")  # the column grants too
    op.execute(f"REVOKE ALL ON SCHEMA public FROM {role}")
    op.execute(
        "UPDATE elephant_meta SET schema_version = '0008_relational_graph', updated_at = now()"
    )
