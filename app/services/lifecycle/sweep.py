"""The dedup sweep: merge notes that carry the same information, never an update.

Commit already merges a near duplicate into what is stored (app/services/memory/commit.py).
Some slip through: notes stored while the embedder was down (no vector, so no
neighbour to compare with), or two commits racing each other. The sweep walks the
tenant's notes in the order they were stored, from where the last sweep stopped
(its report keeps the cursor), and asks of each its nearest older notes of the same
source the question commit asks: the cosine rule (dedup.* settings) AND the same
information (app/services/memory/dedup.py: numbers, dates, names, negation, ...). So "my PIN
is 1234" and "my PIN is 5678" both stay.

A merge keeps the older note and folds the newer one into it: seen and access counts
add up, the latest seen/used times and the higher importance win, and the newer note's
facts, feedback and admission decision move to the older one before the newer row
is deleted (its passages go with it). A note stored with force is never merged away:
the caller asked for it to be kept.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from psycopg import sql

from app.db.resources import load_sql
from app.db.runtime import Connection
from app.services.lifecycle.report import Report
from app.services.memory import dedup
from app.services.runtime import Elephant

# Rows committed a little after a later row was stored (long transactions) are looked
# at again by the next sweep; looking twice costs a neighbour query, nothing else.
CURSOR_SLACK = timedelta(minutes=10)
NEIGHBOURS = 5
EPOCH = datetime.fromisoformat("1970-01-01T00:00:00+00:00")

_CANDIDATES = load_sql("lifecycle/sweep_candidates.sql")
# Older notes of the same source, nearest first (HNSW, iterative scan where there is one).
_NEIGHBOURS = load_sql("lifecycle/sweep_neighbours.sql")
_MERGE = load_sql("lifecycle/sweep_merge.sql")
# Its uses count for the note kept (the DELETE's trigger then drops the gone note's row).
_MERGE_USES = load_sql("lifecycle/sweep_merge_uses.sql")
# The rows that name the gone note name the note kept.
_MOVED = ("facts", "feedback", "admission_log")
_LOCK_GONE = "SELECT 1 FROM memories WHERE tenant_id = %(tenant)s AND id = %(gone)s FOR UPDATE"
_MOVE = "UPDATE {} SET memory_id = %(keep)s WHERE tenant_id = %(tenant)s AND memory_id = %(gone)s"


def last_cursor(conn: Connection, tenant: str) -> datetime | None:
    """Where the last sweep of this tenant stopped (its report's cursor)."""
    row = conn.execute(
        load_sql("lifecycle/sweep_cursor.sql"),
        (tenant,),
    ).fetchone()
    return datetime.fromisoformat(row[0]) if row and row[0] else None


def run(elephant: Elephant, conn: Connection, tenant: str, *, dry_run: bool) -> Report:
    batch = elephant.settings.maintenance.dedup_batch
    cursor = last_cursor(conn, tenant)
    since = EPOCH if cursor is None else cursor - CURSOR_SLACK
    conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
    rows = conn.execute(_CANDIDATES, {"tenant": tenant, "since": since, "batch": batch}).fetchall()
    report = Report("dedup", tenant, dry_run, counts={"merged": 0})
    merges: list[dict[str, Any]] = []
    gone: set[str] = set()
    checked = kept = 0
    reached = cursor
    for memory_id, text, source, embedding, created_at, forced in rows:
        if embedding is None:
            break  # no vector yet: the cursor waits here until the backfill gives it one
        reached = created_at
        if forced or memory_id in gone:
            continue
        checked += 1
        neighbours = [
            (str(nid), str(ntext), float(similarity))
            for nid, ntext, similarity in conn.execute(
                _NEIGHBOURS,
                {
                    "tenant": tenant,
                    "embedding": embedding,
                    "source": source,
                    "created_at": created_at,
                    "id": memory_id,
                    "k": NEIGHBOURS,
                },
            ).fetchall()
            if str(nid) not in gone
        ]
        screening = dedup.screen(text, neighbours, elephant.settings.dedup)
        kept += len(screening.differing)
        if screening.duplicate is None:
            continue
        into = screening.duplicate.memory_id
        merges.append(
            {"kept": into, "merged": memory_id, "cosine": round(screening.duplicate.similarity, 4)}
        )
        gone.add(memory_id)
        if not dry_run:
            merge(conn, tenant, keep=into, gone=memory_id)
    report.counts["merged"] = len(merges)
    report.more = len(rows) >= batch
    report.detail = {
        "checked": checked,
        "kept_apart": kept,  # close neighbours that say something else (updates)
        "merges": merges[:100],
        "cursor": None if reached is None else reached.isoformat(),
    }
    return report


def merge(conn: Connection, tenant: str, *, keep: str, gone: str) -> None:
    """Fold note ``gone`` into note ``keep`` (see the module docstring), then delete it.
    ``gone`` is locked first: an extraction writing its facts holds it FOR KEY SHARE
    (app/services/jobs/sources.py), so its facts are committed before they are moved,
    or the job finds the note gone and writes nothing."""
    params = {"tenant": tenant, "keep": keep, "gone": gone}
    conn.execute(_LOCK_GONE, params)
    conn.execute(_MERGE, params)
    conn.execute(_MERGE_USES, params)
    for table in _MOVED:
        conn.execute(sql.SQL(_MOVE).format(sql.Identifier(table)), params)
    conn.execute("DELETE FROM memories WHERE tenant_id = %(tenant)s AND id = %(gone)s", params)
