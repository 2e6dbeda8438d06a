"""The audit log: admin actions, key lifecycle, denied requests and erasures.

Rows are written through ``elephant_audit(...)`` (the app role cannot read or
change the table) and read as the migrator. A row names the key by its prefix
and never holds memory text: an erasure of a person is logged with a digest of
the name, so the log does not keep what was erased.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from app.db.resources import load_sql
from app.db.runtime import Connection, Database
from app.errors import ElephantError
from app.protocol import JSONObject
from app.services.common import paging

log = logging.getLogger(__name__)

MAX_LIMIT = 500  # more than the other listings' 200: entries are small


def write(
    conn: Connection,
    *,
    tenant: str | None,
    key_prefix: str | None,
    action: str,
    target: str = "",
    outcome: str = "ok",
    client: str | None = None,
    detail: JSONObject | None = None,
) -> None:
    conn.execute(
        "SELECT elephant_audit(%s, %s, %s, %s, %s, %s, %s::jsonb)",
        (
            tenant,
            key_prefix,
            action,
            target,
            outcome,
            client,
            json.dumps(detail or {}, default=str),
        ),
    )


def record(db: Database, **entry: Any) -> None:
    """Write one entry in its own transaction; a failure is logged, never raised to a caller
    whose action already happened."""
    try:
        with db.connection() as conn:
            write(conn, **entry)
    except (ElephantError, psycopg.Error) as exc:
        log.error("audit entry %s not written: %s", entry.get("action"), exc)


def digest(value: str) -> str:
    """A stable stand-in for a value that must not be kept (an erased name)."""
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One row of the log: who (key prefix), what, on what, with what outcome."""

    id: int
    at: datetime
    tenant: str | None
    key_prefix: str | None
    action: str
    target: str
    outcome: str
    client: str | None
    detail: JSONObject


@dataclass(frozen=True, slots=True)
class AuditLog:
    """A page of entries, newest first: ``next_cursor`` continues (None: the last page).
    ``entries`` repeats ``items`` and ``offset`` is where an offset page started (both
    from before cursors; deprecated). ``tenant`` is the tenant whose entries these are
    (None: every tenant's, and those of no tenant)."""

    items: list[AuditEntry]
    next_cursor: str | None
    entries: list[AuditEntry]
    offset: int
    tenant: str | None


LISTING = "audit"


def entries(
    db: Database,
    *,
    tenant: str | None,
    limit: int = 50,
    offset: int = 0,
    before: tuple[datetime, int] | None = None,
) -> list[AuditEntry]:
    """Newest first; one tenant's entries, or every entry (tenant None: operators);
    only those older than ``before`` (at, id) when given."""
    at, row_id = before if before is not None else (None, None)
    with db.admin_connection() as conn:
        rows = conn.execute(
            load_sql("access/audit_entries.sql"),
            (tenant, tenant, at, at, row_id, limit, offset),
        ).fetchall()
    return [AuditEntry(*row) for row in rows]


def page(
    db: Database, *, tenant: str | None, limit: int, offset: int = 0, cursor: str | None = None
) -> AuditLog:
    """One page, after the cursor's entry when there is one (or ``offset`` entries in)."""
    paging.check_limit(limit, MAX_LIMIT)
    paging.exclusive(cursor, offset)
    before = None
    if cursor is not None:
        at, row_id = paging.decode(LISTING, cursor, (datetime, int))
        before = (at, row_id)
    found = entries(db, tenant=tenant, limit=limit + 1, offset=offset, before=before)
    items = found[:limit]
    following = paging.encode(LISTING, (items[-1].at, items[-1].id)) if len(found) > limit else None
    return AuditLog(items=items, next_cursor=following, entries=items, offset=offset, tenant=tenant)
