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

from typing import LiteralString

from psycopg import sql

from app.db.resources import fragment, load_sql
from app.db.runtime import Connection
from app.services.lifecycle.activation import (
    FACT_ANCHOR,
    MEMORY_ANCHOR,
    ActivationParams,
    sql_call,
)
from app.services.lifecycle.report import Report
from app.services.runtime import Elephant

# table -> (its anchor, which rows decay: facts only while open); the statements are
# sql/lifecycle/decay_*.sql
_TABLES: dict[str, tuple[str, LiteralString]] = {
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
    crossing = sql.SQL(fragment("lifecycle/decay_crossing.sql"))
    for table, (anchor, scope) in _TABLES.items():
        activation = sql.SQL(sql_call("t", "u", anchor))
        for action, state, test in (
            ("dormant", "t.dormant_at IS NULL", "<"),
            ("woken", "t.dormant_at IS NOT NULL", ">="),
        ):
            chosen = crossing.format(
                table=sql.Identifier(table),
                state=sql.SQL(state),
                scope=sql.SQL(scope),
                activation=activation,
                test=sql.SQL(test),
            )
            if dry_run:
                query = sql.SQL("SELECT count(*) FROM ({}) AS c").format(chosen)
            else:
                query = sql.SQL(fragment("lifecycle/decay_mark.sql")).format(
                    crossing=chosen,
                    table=sql.Identifier(table),
                    value=sql.SQL("now()" if action == "dormant" else "NULL"),
                )
            rows = conn.execute(query, params).fetchall()
            changed = int(rows[0][0]) if dry_run else len(rows)
            report.counts[f"{table}_{action}"] = changed
            report.more = report.more or changed >= batch
    row = conn.execute(load_sql("lifecycle/decay_dormant.sql"), {"tenant": tenant}).fetchone()
    if row is not None:
        report.detail["dormant_now"] = {"memories": int(row[0]), "facts": int(row[1])}
    return report
