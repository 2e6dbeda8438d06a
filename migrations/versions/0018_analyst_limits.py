"""Analysts hold no power the server needs: locks, large objects, NOTIFY, temp tables.

Issue 40: an analyst held the keyword rebuild's advisory lock (the API did not start
for 99 s), locked a tenant's store item, stored 48 MB of large objects (and revoking it
then failed) and sent NOTIFY on the app's channel. Postgres grants these to PUBLIC, so:

- EXECUTE on every advisory-lock function (session and transaction level, exclusive
  and shared, try and wait, bigint and int4 forms, the unlocks), every large-object
  writer (lo_creat, lo_create, lo_from_bytea, lo_put, lowrite, lo_truncate[64],
  lo_unlink) and pg_notify is taken from PUBLIC and granted back to the roles Elephant
  runs as (the app and worker roles; the migrator is a superuser). Only a superuser may
  change these grants (pg_catalog's functions belong to the bootstrap superuser): a
  migrator that is not one skips them (docs/security.md says what then holds).
- TEMPORARY on the database is taken from PUBLIC and granted to the app and worker
  roles (the importer's staging tables), where the migrator may (superuser or owner).
- `analysts.role_settings`, `analysts.verifier`: each analyst role's settings and SCRAM
  verifier as created (the table is the migrator's alone), so the analyst guard
  (app/services/access/analyst_guard.py) can put back what the analyst changed (ALTER
  ROLE self SET ..., a new password). Existing analysts get the new limits here
  (idle-in-transaction 60 s, work_mem 16MB, temp_file_limit 256MB where the migrator
  is a superuser); their verifier is read from pg_authid where the migrator may.

The NOTIFY statement checks no privilege and cannot be taken away: the app treats a
notification on its channels as a hint only.

Revision ID: 0018_analyst_limits
Revises: 0017_analyst_views
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision = "0018_analyst_limits"
down_revision = "0017_analyst_views"
branch_labels = None
depends_on = None

ADVISORY_NAMES = (
    "advisory_lock",
    "advisory_lock_shared",
    "advisory_unlock",
    "advisory_unlock_shared",
    "try_advisory_lock",
    "try_advisory_lock_shared",
    "advisory_xact_lock",
    "advisory_xact_lock_shared",
    "try_advisory_xact_lock",
    "try_advisory_xact_lock_shared",
)
ADVISORY = (
    *(f"pg_{name}({args})" for name in ADVISORY_NAMES for args in ("bigint", "integer, integer")),
    "pg_advisory_unlock_all()",
)
LARGE_OBJECT_WRITERS = (
    "lo_creat(integer)",
    "lo_create(oid)",
    "lo_from_bytea(oid, bytea)",
    "lo_put(oid, bigint, bytea)",
    "lowrite(integer, bytea)",
    "lo_truncate(integer, integer)",
    "lo_truncate64(integer, bigint)",
    "lo_unlink(oid)",
)
FUNCTIONS = (*ADVISORY, *LARGE_OBJECT_WRITERS, "pg_notify(text, text)")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _roles() -> str:
    """The roles Elephant runs as: the app role and the worker role."""
    attributes = context.config.attributes
    app = str(attributes["app_role"])
    worker = str(attributes.get("worker_role", "elephant_worker"))
    return ", ".join(_quote(role) for role in (app, worker))


def _may(bind: sa.Connection) -> tuple[bool, bool]:
    """(superuser, owns the database): what the migrator may change."""
    row = bind.execute(
        sa.text(
            "SELECT r.rolsuper, d.datdba = r.oid FROM pg_roles AS r, pg_database AS d "
            "WHERE r.rolname = current_user AND d.datname = current_database()"
        )
    ).one()
    return bool(row[0]), bool(row[1])


def _database() -> str:
    name = op.get_bind().execute(sa.text("SELECT current_database()")).scalar()
    return _quote(str(name))


def upgrade() -> None:
    bind = op.get_bind()
    superuser, owner = _may(bind)
    roles = _roles()
    if superuser:
        for function in FUNCTIONS:
            op.execute(f"REVOKE EXECUTE ON FUNCTION pg_catalog.{function} FROM PUBLIC")
            op.execute(f"GRANT EXECUTE ON FUNCTION pg_catalog.{function} TO {roles}")
    if superuser or owner:
        op.execute(f"REVOKE TEMPORARY ON DATABASE {_database()} FROM PUBLIC")
        op.execute(f"GRANT TEMPORARY ON DATABASE {_database()} TO {roles}")
    _analyst_columns(superuser)
    op.execute(
        "UPDATE elephant_meta SET schema_version = '0018_analyst_limits', updated_at = now()"
    )


def _analyst_columns(superuser: bool) -> None:
    """The settings and verifier each analyst role was given, for the guard to restore;
    existing analysts get the new limits first (temp_file_limit needs a superuser)."""
    op.execute("ALTER TABLE analysts ADD COLUMN role_settings text[]")
    op.execute("ALTER TABLE analysts ADD COLUMN verifier text")
    bind = op.get_bind()
    for role, timeout in bind.execute(
        sa.text("SELECT role_name, statement_timeout_seconds FROM analysts")
    ).all():
        for setting, value in _settings(int(timeout), superuser):
            op.execute(f"ALTER ROLE {_quote(str(role))} SET {setting} = '{value}'")
    op.execute(
        "UPDATE analysts AS a SET role_settings = (SELECT s.setconfig "
        "FROM pg_db_role_setting AS s JOIN pg_roles AS r ON r.oid = s.setrole "
        "WHERE r.rolname = a.role_name AND s.setdatabase = 0)"
    )
    if superuser:
        op.execute(
            "UPDATE analysts AS a SET verifier = p.rolpassword FROM pg_authid AS p "
            "WHERE p.rolname = a.role_name"
        )
    for column, text in (
        (
            "role_settings",
            "The role''s settings as created (name=value, ALTER ROLE SET); "
            "the analyst guard puts them back when the analyst changes them.",
        ),
        (
            "verifier",
            "The password verifier as created (the migrator reads it, nobody else): "
            "the analyst guard puts it back when the analyst changes its password.",
        ),
    ):
        op.execute(f"COMMENT ON COLUMN analysts.{column} IS '{text}'")


def _settings(timeout_seconds: int, superuser: bool) -> list[tuple[str, str]]:
    """As app/services/access/analysts.py role_settings gives a new analyst."""
    settings = [
        ("statement_timeout", f"{timeout_seconds}s"),
        ("idle_in_transaction_session_timeout", "60s"),
        ("default_transaction_read_only", "on"),
        ("work_mem", "16MB"),
    ]
    return [*settings, ("temp_file_limit", "256MB")] if superuser else settings


def downgrade() -> None:
    bind = op.get_bind()
    superuser, owner = _may(bind)
    roles = _roles()
    op.execute("ALTER TABLE analysts DROP COLUMN IF EXISTS role_settings")
    op.execute("ALTER TABLE analysts DROP COLUMN IF EXISTS verifier")
    if superuser or owner:
        op.execute(f"REVOKE TEMPORARY ON DATABASE {_database()} FROM {roles}")
        op.execute(f"GRANT TEMPORARY ON DATABASE {_database()} TO PUBLIC")
    if superuser:
        for function in FUNCTIONS:
            op.execute(f"REVOKE EXECUTE ON FUNCTION pg_catalog.{function} FROM {roles}")
            op.execute(f"GRANT EXECUTE ON FUNCTION pg_catalog.{function} TO PUBLIC")
    op.execute("UPDATE elephant_meta SET schema_version = '0017_analyst_views', updated_at = now()")
