"""The decay job: mark rows whose activation fell below lifecycle.dormant_below dormant.

Activation itself is computed when read (activation.py), so decay rewrites nothing to
keep it current. What it persists is the crossing: ``dormant_at`` is set when a
memory's or an open fact's activation fell below the floor, and cleared when use or
feedback lifted it again. Dormant rows stay searchable (the activation prior already
ranks them lower when it is on) and are never deleted by decay; the column lets an
operator see what memory has gone cold (``WHERE dormant_at IS NOT NULL``). Only
crossings are written, at most ``maintenance.decay_batch`` per table and direction.
"""

from __future__ import annotations

from app.db.runtime import Connection
from app.services.lifecycle.activation import (
    FACT_ANCHOR,
    MEMORY_ANCHOR,
    ActivationParams,
    sql_call,
)
from app.services.lifecycle.report import Report
from app.services.runtime import Elephant

# table -> (its anchor, which rows decay: facts only while open)
_TABLES = {
    "memories": (MEMORY_ANCHOR, "true"),
    "facts": (FACT_ANCHOR, "t.expired_at IS NULL"),
}


def run(elephant: Elephant, conn: Connection, tenant: str, *, dry_run: bool) -> Report:
    lifecycle = elephant.settings.lifecycle
    batch = elephant.settings.maintenance.decay_batch
    params: dict[str, object] = {
        **ActivationParams.of(lifecycle).sql_args(),
        "tenant": tenant,
        "floor": lifecycle.dormant_below,
        "batch": batch,
    }
    report = Report("decay", tenant, dry_run, detail={"dormant_below": lifecycle.dormant_below})
    for table, (anchor, scope) in _TABLES.items():
        activation = sql_call("t", "u", anchor)
        for action, state, test in (
            ("dormant", "t.dormant_at IS NULL", "<"),
            ("woken", "t.dormant_at IS NOT NULL", ">="),
        ):
            chosen = (
                f"SELECT t.id FROM {table} AS t "
                "LEFT JOIN access_stats AS u ON u.tenant_id = t.tenant_id AND u.item_id = t.id "
                f"WHERE t.tenant_id = %(tenant)s AND {state} AND {scope} "
                f"AND {activation} {test} %(floor)s LIMIT %(batch)s"
            )
            if dry_run:
                query = f"SELECT count(*) FROM ({chosen}) AS c"
            else:
                value = "now()" if action == "dormant" else "NULL"
                query = (
                    f"WITH c AS ({chosen}) UPDATE {table} AS u SET dormant_at = {value} "
                    "FROM c WHERE u.tenant_id = %(tenant)s AND u.id = c.id RETURNING 1"
                )
            rows = conn.execute(query, params).fetchall()
            changed = int(rows[0][0]) if dry_run else len(rows)
            report.counts[f"{table}_{action}"] = changed
            report.more = report.more or changed >= batch
    row = conn.execute(
        "SELECT (SELECT count(*) FROM memories "
        "        WHERE tenant_id = %(tenant)s AND dormant_at IS NOT NULL), "
        "(SELECT count(*) FROM facts WHERE tenant_id = %(tenant)s AND dormant_at IS NOT NULL)",
        {"tenant": tenant},
    ).fetchone()
    if row is not None:
        report.detail["dormant_now"] = {"memories": int(row[0]), "facts": int(row[1])}
    return report
