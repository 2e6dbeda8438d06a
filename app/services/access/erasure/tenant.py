"""Erasure of a whole tenant, as the migrator: every table's rows of the tenant (the
foreign keys to ``tenants`` cascade), its graph (the AGE schema, dropped by a trigger,
and the relational graph's rows) and its API keys; the audit log stays (it holds no
memory text). Everything is counted first and checked gone after, in one transaction.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from app.db import lock_waits
from app.db.resources import load_sql
from app.db.runtime import TENANT_SETTING, Connection
from app.errors import ElephantError
from app.services.access import keys
from app.services.access.erasure.report import (
    ErasureReport,
    GraphRemoval,
    TenantTarget,
    audit_erasure,
)
from app.services.access.erasure.request import EraseIn
from app.services.graph.age import graph_name
from app.services.graph.backend import present
from app.services.runtime import Elephant

# Kept on erasure of a whole tenant: the record that the erasure happened (no memory text).
KEPT_TABLES = frozenset({"audit_log"})
# The relational graph backend's tables (entities, relations): reported as graph vertices
# and edges, not as rows.
RELATIONAL_GRAPH_TABLES = ("kg_entities", "kg_relations")


def erase_tenant(
    elephant: Elephant, tenant: str, request: EraseIn, actor: str | None
) -> ErasureReport:
    """As the migrator: every table's rows of the tenant, its graph schema, its keys.
    First the sessions of the tenant's analysts end (they are losing it); every lock
    wait is bounded (a lock held elsewhere past database.lock_timeout_ms: 503, nothing
    erased)."""
    with elephant.db.admin_connection() as conn:
        if not request.dry_run:
            end_analyst_sessions(conn, tenant)
        with conn.transaction():
            lock_waits.bound(conn, elephant.db.lock_timeout_ms)
            # Row-level security may apply to the migrator (external mode, FORCE): scope it.
            conn.execute("SELECT set_config(%s, %s, true)", (TENANT_SETTING, tenant))
            report = _erase(conn, tenant, request, actor)
    if not request.dry_run:
        elephant.access.forget(tenant)
        elephant.db.forget_tenant(tenant)
        for backend in present(elephant.db.capabilities):
            elephant.graph_store(backend).forget(tenant)
    return report


def end_analyst_sessions(conn: Connection, tenant: str) -> int:
    """End the sessions of the analysts granted ``tenant`` or holding a lock on its graph
    (autocommit connection); a migrator without the right to signal them leaves them to
    the lock bound."""
    try:
        return len(
            conn.execute(
                load_sql("erasure/end_analyst_sessions.sql"),
                {"tenant": tenant, "graph": graph_name(tenant)},
            ).fetchall()
        )
    except psycopg.errors.InsufficientPrivilege:
        return 0


def _erase(conn: Connection, tenant: str, request: EraseIn, actor: str | None) -> ErasureReport:
    """The erasure's transaction body: drop (or, dry run, count and roll back), audit."""
    with conn.transaction(force_rollback=request.dry_run):
        removed, graph = _drop_tenant(conn, tenant)
    report = ErasureReport(TenantTarget(tenant=tenant), request.dry_run, removed, graph)
    audit_erasure(conn, tenant, actor, request, report)
    return report


def _tenant_tables(conn: Connection) -> list[str]:
    """Every table with a tenant_id column in the schema of `tenants` (future ones too):
    sql/erasure/tenant_tables.sql."""
    rows = conn.execute(load_sql("erasure/tenant_tables.sql")).fetchall()
    return [str(row[0]) for row in rows if row[0] not in KEPT_TABLES and row[0] != "api_keys"]


def count_tenant_rows(conn: Connection, table: str, tenant: str) -> int:
    """Rows of ``tenant`` in ``table`` (a table with tenant_id): erasure and export count."""
    row = conn.execute(
        sql.SQL("SELECT count(*) FROM {} WHERE tenant_id = %s").format(sql.Identifier(table)),
        (tenant,),
    ).fetchone()
    return int(row[0]) if row else 0


def _graph_size(conn: Connection, tenant: str) -> tuple[bool, int, int]:
    """(graph exists, vertices, edges) of the tenant's AGE graph."""
    graph = graph_name(tenant)
    # Two statements: without AGE (the managed mode) a statement naming ag_catalog.ag_graph
    # fails when parsed, whatever a to_regclass test beside it says.
    catalog = conn.execute("SELECT to_regclass('ag_catalog.ag_graph') IS NOT NULL").fetchone()
    if not catalog or not catalog[0]:
        return False, 0, 0
    exists = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM ag_catalog.ag_graph WHERE name::text = %s)", (graph,)
    ).fetchone()
    if not exists or not exists[0]:
        return False, 0, 0
    sizes = []
    for table in ("_ag_label_vertex", "_ag_label_edge"):
        row = conn.execute(
            sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(graph, table))
        ).fetchone()
        sizes.append(int(row[0]) if row else 0)
    return True, sizes[0], sizes[1]


def _drop_tenant(conn: Connection, tenant: str) -> tuple[dict[str, int], GraphRemoval]:
    """Count, then delete the tenant row: foreign keys cascade to every table (the
    relational graph's too) and a trigger drops the AGE graph schema. Then check nothing
    is left, else roll everything back. Graph rows are reported as vertices and edges."""
    conn.execute("SELECT 1 FROM tenants WHERE id = %s FOR UPDATE", (tenant,))
    tables = _tenant_tables(conn)
    removed = {table: count_tenant_rows(conn, table, tenant) for table in tables}
    had_graph, vertices, edges = _graph_size(conn, tenant)
    vertices += removed.pop(RELATIONAL_GRAPH_TABLES[0], 0)
    edges += removed.pop(RELATIONAL_GRAPH_TABLES[1], 0)
    removed["api_keys"] = keys.delete_tenant_keys(conn, tenant)
    removed["tenants"] = conn.execute("DELETE FROM tenants WHERE id = %s", (tenant,)).rowcount
    left = [table for table in tables if count_tenant_rows(conn, table, tenant)]
    if left:
        raise ElephantError(
            f"erasure of tenant {tenant} stopped, nothing was removed: rows would remain in "
            f"{', '.join(left)} (a table without ON DELETE CASCADE to tenants)"
        )
    dropped = had_graph and not _graph_size(conn, tenant)[0]
    graph = GraphRemoval(vertices=vertices, edges=edges, schema_dropped=dropped)
    return {table: removed[table] for table in sorted(removed)}, graph
