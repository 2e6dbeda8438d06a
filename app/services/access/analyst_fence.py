"""The fence around an analyst: a schema of views that name its tenants (migration 0017).

Row-level security alone let an analyst's own conditions run before the policy (an
index condition is evaluated first), so ``EXPLAIN ANALYZE`` counted another tenant's
rows. An analyst therefore reads nothing in ``public``: its role's search_path starts
with ``analyst_<name>``, whose security-barrier views name the granted tenants as
constants, check that they are still granted, and end in ``OFFSET 0`` so the planner
pushes none of the caller's conditions into the base scan. The SQL functions that
build and drop the schema live in the database (``elephant_analyst_fence`` /
``elephant_analyst_unfence``), so the migration, ``analysts create`` and ``revoke`` and
graph provisioning (``elephant_secure_graph``) share one definition. Run as the migrator,
inside the caller's transaction.
"""

from __future__ import annotations

from app.db.runtime import Connection

SCHEMA_PREFIX = "analyst_"


def schema_name(name: str) -> str:
    """The analyst's own schema: ``analyst_<name>`` (a name is at most 30 characters)."""
    return f"{SCHEMA_PREFIX}{name}"


def build(conn: Connection, role: str) -> int:
    """(Re)build the role's schema from its analyst_grants rows, grant it its tenants'
    graphs and set its search_path; returns how many tenant tables it fences."""
    row = conn.execute("SELECT elephant_analyst_fence(%s)", (role,)).fetchone()
    return int(row[0]) if row else 0


def remove(conn: Connection, role: str) -> None:
    """Drop the role's schema and every privilege granted to it in this database (its
    graphs), so the role can be dropped. Call before its analysts row is deleted."""
    conn.execute("SELECT elephant_analyst_unfence(%s)", (role,))
