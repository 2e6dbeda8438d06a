"""Deletes win over work in flight: a job re-checks its source when it writes.

A job reads its source (a note, a span of turns), then works without holding a lock
(an LLM call, embedding), then writes. A store delete, a put that replaces a note, an
erasure or a retention sweep may end in between. So before its first searchable row a
job takes, in its own transaction, a lock that conflicts with theirs and reads its source
again: the tenant row in KEY SHARE mode (erasure takes FOR UPDATE on it) and its notes,
turns and windows in KEY SHARE mode (a store put or delete locks the note FOR UPDATE
before superseding it, a sweep or an erasure DELETEs). Either the delete ended
first and the job sees its source gone, writes nothing and is done with the reason
(:class:`SourceGone`), or the delete waits until the job's rows are committed and then
closes or erases them with the rest. Row locks end with the transaction: they work
behind a transaction pooler (no session advisory lock).
"""

from __future__ import annotations

from collections.abc import Sequence

from app.db.resources import load_sql
from app.db.runtime import Connection
from app.errors import ElephantError


class SourceGone(ElephantError):
    """The job's source was deleted, replaced or erased while the job ran: it writes
    nothing searchable and is done, with this message as its reason (runner.run_job)."""


TENANT_ERASED = "the tenant was erased while the job ran: nothing written"
NOTE_GONE = "the note was deleted, replaced or erased while the job ran: nothing written"


def hold_tenant(conn: Connection, tenant: str) -> None:
    """Lock the tenant row against erasure until the transaction ends (sql/jobs/
    hold_tenant.sql); SourceGone when the tenant was erased."""
    if conn.execute(load_sql("jobs/hold_tenant.sql"), {"tenant": tenant}).fetchone() is None:
        raise SourceGone(TENANT_ERASED)


def hold_notes(
    conn: Connection, tenant: str, memory_ids: Sequence[str], *, current: bool = True
) -> set[str]:
    """The notes among ``memory_ids`` still there (and, with ``current``, not replaced or
    deleted as store items), locked FOR KEY SHARE until the transaction ends
    (sql/jobs/hold_notes.sql)."""
    params = {"tenant": tenant, "memories": list(memory_ids), "current": current}
    rows = conn.execute(load_sql("jobs/hold_notes.sql"), params).fetchall()
    return {str(row[0]) for row in rows}


def hold_note(conn: Connection, tenant: str, memory_id: str) -> None:
    """The tenant and the note held, or SourceGone."""
    hold_tenant(conn, tenant)
    if memory_id not in hold_notes(conn, tenant, [memory_id]):
        raise SourceGone(NOTE_GONE)
