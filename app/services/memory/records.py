"""Memories and facts as records: list a page, read one, update one, delete one.

Reads run inside the caller's tenant (row-level security): an id of another
tenant is simply not found, so a caller learns nothing about other tenants.
Pages are newest first and continue by keyset cursor (app.services.common.paging), so a
write between two pages neither repeats nor skips a row. An update changes a
memory's importance, source or metadata, never its text: a memory is evidence
(its facts, contradictions and search hits point at it), so a correction is a new
note whose facts close the outdated ones, and nothing said earlier vanishes.
Deleting goes through erasure, so what hangs off the row (derived facts, entity
links, gate decisions, feedback, contradictions, jobs) goes in the same
transaction and the deletion is audited. The statements are sql/memory/ (a record's
columns and a listing's filter written once, as fragments).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Generic, Literal, TypedDict, TypeVar
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from app.db.resources import load_sql, load_statement
from app.db.runtime import SQLParams
from app.errors import InvalidInput, NotFound
from app.services.access.erasure import EraseIn, ErasureReport, erase
from app.services.common import paging
from app.services.common.inputs import Label, Metadata, NonBlank, Real, check_metadata
from app.services.runtime import Elephant

MAX_LIMIT = paging.MAX_LIMIT
MAX_OFFSET = 1_000_000

MemoryKind = Literal["note", "window"]
FactStatus = Literal["active", "superseded", "retracted"]
FactType = Literal["world", "experience", "inference"]

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """A note or a conversation window, as ``GET /memories`` shows it."""

    id: str
    kind: MemoryKind
    text: str
    source: str
    importance: float
    conversation_id: str | None
    conversation_external_id: str | None
    turn_start: int | None
    turn_end: int | None
    source_turn_ids: list[str]
    event_at: datetime | None
    created_at: datetime
    seen_count: int
    access_count: int
    last_accessed_at: datetime | None
    metadata: dict[str, Any]
    has_embedding: bool
    facts: int  # facts derived from it


@dataclass(frozen=True, slots=True)
class EntityLink:
    """A fact's link to a graph entity: the fact is about it, or mentions it."""

    key: str
    link: Literal["about", "mentions"]


@dataclass(frozen=True, slots=True)
class FactRecord:
    """An extracted fact with its validity in time and its graph links."""

    id: str
    text: str
    subject: str | None
    fact_type: FactType
    confidence: float
    importance: float
    status: FactStatus
    valid_from: datetime | None
    valid_to: datetime | None
    recorded_at: datetime
    expired_at: datetime | None
    superseded_by: str | None
    memory_id: str | None
    conversation_id: str | None
    source: str | None
    source_turn_ids: list[str]
    observation_kind: str | None
    entities: list[EntityLink]
    metadata: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Page(Generic[R]):
    """One page of rows, newest first. ``next_cursor`` continues after its last row (None:
    this is the last page); ``next_offset`` says the same for offset paging (None when
    the page was asked for by cursor). ``total``: every row the filter matches."""

    items: list[R]
    total: int
    offset: int
    limit: int
    next_cursor: str | None
    next_offset: int | None


@dataclass(frozen=True, slots=True)
class MemoryPage(Page[MemoryRecord]):
    """A page of memories. Named, and its items restated, for the OpenAPI schema (which
    does not resolve a subclassed generic)."""

    items: list[MemoryRecord]


@dataclass(frozen=True, slots=True)
class FactPage(Page[FactRecord]):
    """A page of facts, named for the OpenAPI schema (as MemoryPage)."""

    items: list[FactRecord]


def _check_page(limit: int, offset: int, cursor: str | None) -> None:
    paging.check_limit(limit, MAX_LIMIT)
    if not 0 <= offset <= MAX_OFFSET:
        raise InvalidInput(f"offset must be 0-{MAX_OFFSET}, got {offset}")
    paging.exclusive(cursor, offset)


Listing = Literal["memories", "facts"]
# a listing's rows, as sql/memory/ names their files (memory_keyset.sql, fact_keyset.sql)
_ROW: dict[Listing, str] = {"memories": "memory", "facts": "fact"}


class _Keyset(TypedDict):
    """The keyset parameters of a page: after (created_at, id) of the cursor's row."""

    after_at: datetime | None
    after_id: UUID | None


def _after(listing: Listing, cursor: str | None) -> _Keyset:
    after_at, after_id = paging.after_newest(listing, cursor, UUID)
    return {"after_at": after_at, "after_id": after_id}


# ------------------------------------------------------------------ memories


def _as_uuid(value: str | None) -> UUID | None:
    try:
        return None if value is None else UUID(value)
    except ValueError:
        return None


def list_memories(
    elephant: Elephant,
    tenant: str,
    *,
    kind: MemoryKind | None = None,
    source: str | None = None,
    conversation: str | None = None,
    limit: int = 50,
    offset: int = 0,
    cursor: str | None = None,
) -> MemoryPage:
    """Newest first. ``conversation``: the caller's id for it or its uuid."""
    _check_page(limit, offset, cursor)
    params: SQLParams = {
        "kind": kind,
        "source": source,
        "conversation": conversation,
        "conversation_uuid": _as_uuid(conversation),
        "limit": limit,
        "offset": offset,
        **_after("memories", cursor),
    }
    rows, total = _page(elephant, tenant, "memories", params)
    items = [MemoryRecord(*row) for row in rows[:limit]]
    return MemoryPage(items, total, offset, limit, *_next("memories", items, rows, offset, cursor))


def get_memory(
    elephant: Elephant, tenant: str, memory_id: UUID, *, record_access: bool = True
) -> MemoryRecord:
    """``record_access`` False: looking, not using (the console), leaves its activation."""
    row = _one(
        elephant,
        tenant,
        "memory/memory_by_id.sql",
        memory_id,
    )
    if row is None:
        raise NotFound(f"no memory with id {memory_id} in this tenant")
    if record_access:
        elephant.access.record(tenant, [str(memory_id)], [])  # a use: refreshes its activation
    return MemoryRecord(*row)


class MemoryPatch(BaseModel):
    """What ``PATCH /memories/{id}`` may change; fields left out stay as they are."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    importance: Real | None = Field(None, ge=0, le=100, description="0-100.")
    source: Label | None = Field(None, description="Where it came from (its facts follow).")
    metadata: Metadata | None = Field(
        None, description="Merged into the memory's metadata key by key; a key set to null "
        "is removed.",
    )  # fmt: skip
    text: NonBlank | None = Field(
        None, description="Only the current text is accepted: to correct a memory, commit the "
        "corrected note (its facts close the outdated ones) and delete this one if it was wrong.",
    )  # fmt: skip


TEXT_IS_EVIDENCE = (
    "text: a memory's text is not changed in place (its facts, contradictions and search "
    "hits point at it): commit the corrected text as a new note (POST /commit); its facts "
    "go through contradiction detection and close this memory's outdated ones. Delete this "
    "memory (DELETE /memories/{id}) if it was simply wrong."
)


def update_memory(
    elephant: Elephant, tenant: str, memory_id: UUID, patch: MemoryPatch
) -> MemoryRecord:
    """Importance, source (its facts' too) and metadata, in one transaction on the row."""
    if not patch.model_fields_set:
        raise InvalidInput("give at least one of importance, source, metadata to change")
    with elephant.db.tenant(tenant) as conn:
        row = conn.execute(
            "SELECT text, metadata FROM memories WHERE tenant_id = %s AND id = %s FOR UPDATE",
            (tenant, memory_id),
        ).fetchone()
        if row is None:
            raise NotFound(f"no memory with id {memory_id} in this tenant")
        if patch.text is not None and patch.text != row[0]:
            raise InvalidInput(
                TEXT_IS_EVIDENCE,
                details={"fields": [{"key": "text", "message": "not changeable in place"}]},
            )
        metadata = dict(row[1])
        for key, value in (patch.metadata or {}).items():
            if value is None:
                metadata.pop(key, None)
            else:
                metadata[key] = value
        try:
            check_metadata(metadata)
        except ValueError as exc:
            raise InvalidInput(f"metadata: once merged, {exc}") from None
        conn.execute(
            load_sql("memory/update_memory.sql"),
            {
                "importance": patch.importance,
                "source": patch.source,
                "metadata": json.dumps(metadata),
                "tenant": tenant,
                "id": memory_id,
            },
        )
        if patch.source is not None:
            conn.execute(
                "UPDATE facts SET source = %s WHERE tenant_id = %s AND memory_id = %s",
                (patch.source, tenant, memory_id),
            )
        updated = conn.execute(
            load_statement("memory/memory_by_id.sql"), {"tenant": tenant, "id": memory_id}
        ).fetchone()
    if updated is None:  # not after FOR UPDATE in this transaction; kept for the types
        raise NotFound(f"no memory with id {memory_id} in this tenant")
    return MemoryRecord(*updated)


def delete_memory(
    elephant: Elephant, tenant: str, memory_id: UUID, *, actor: str | None = None
) -> ErasureReport:
    """The memory with the facts derived from it and everything hanging off both."""
    request = EraseIn(memory_ids=[memory_id])
    return erase(elephant, tenant, request, actor=actor, must_exist=True)


# ------------------------------------------------------------------ facts

# Where the entity links sit in a row: the columns are in FactRecord's field order.
_ENTITIES = [f.name for f in fields(FactRecord)].index("entities")


def list_facts(
    elephant: Elephant,
    tenant: str,
    *,
    status: FactStatus | None = None,
    source: str | None = None,
    memory_id: UUID | None = None,
    subject: str | None = None,
    fact_type: FactType | None = None,
    as_of: datetime | None = None,
    limit: int = 50,
    offset: int = 0,
    cursor: str | None = None,
) -> FactPage:
    """Newest first; superseded and retracted facts included unless ``status`` says.
    ``subject`` matches case-insensitively; ``as_of``: the facts true at that instant
    (valid_from <= as_of < valid_to, an open end unbounded) and not retracted, as search's
    as_of filter (sql/retrieval/fact_filters.sql)."""
    _check_page(limit, offset, cursor)
    params: SQLParams = {
        "status": status,
        "source": source,
        "memory_id": memory_id,
        "subject": subject,
        "fact_type": fact_type,
        "as_of": as_of,
        "limit": limit,
        "offset": offset,
        **_after("facts", cursor),
    }
    rows, total = _page(elephant, tenant, "facts", params)
    items = [_fact(row) for row in rows[:limit]]
    return FactPage(items, total, offset, limit, *_next("facts", items, rows, offset, cursor))


def get_fact(
    elephant: Elephant, tenant: str, fact_id: UUID, *, record_access: bool = True
) -> FactRecord:
    """``record_access`` False: looking, not using (the console), leaves its activation."""
    row = _one(
        elephant,
        tenant,
        "memory/fact_by_id.sql",
        fact_id,
    )
    if row is None:
        raise NotFound(f"no fact with id {fact_id} in this tenant")
    if record_access:
        elephant.access.record(tenant, [], [str(fact_id)])  # a use: refreshes its activation
    return _fact(row)


def _one(elephant: Elephant, tenant: str, query: str, row_id: UUID) -> tuple[Any, ...] | None:
    """One row by id (``query``, a file of sql/, takes ``tenant`` and ``id``): from a replica, and
    from the primary when the replica has not got it yet (a client that reads back what it
    just wrote must not see a 404 from lag)."""
    for consistency in ("replica", "primary"):
        with elephant.db.reading(tenant, consistency) as conn:
            row = conn.execute(load_statement(query), {"tenant": tenant, "id": row_id}).fetchone()
        if row is not None or not elephant.db.has_replicas:
            return row
    return None


def _fact(row: tuple[Any, ...]) -> FactRecord:
    """A row of ``_FACT_COLUMNS``; its entity links arrive as a JSON list of {key, link}."""
    values = list(row)
    values[_ENTITIES] = [EntityLink(link["key"], link["link"]) for link in values[_ENTITIES]]
    return FactRecord(*values)


def delete_fact(
    elephant: Elephant, tenant: str, fact_id: UUID, *, actor: str | None = None
) -> ErasureReport:
    """The fact with its entity links, feedback and contradictions."""
    request = EraseIn(fact_ids=[fact_id])
    return erase(elephant, tenant, request, actor=actor, must_exist=True)


def _page(
    elephant: Elephant, tenant: str, listing: Listing, params: SQLParams
) -> tuple[list[tuple[Any, ...]], int]:
    """One page plus one row (is there a next page?), newest first, after the cursor's row
    when there is one, and the total the same filter matches (one transaction, on a
    replica when there is one): sql/memory/<listing>_page.sql and <listing>_count.sql."""
    keyset = "no_keyset.sql" if params["after_at"] is None else f"{_ROW[listing]}_keyset.sql"
    params = {**params, "tenant": tenant}  # the filters name it (``WHERE x.tenant_id = ...``)
    with elephant.db.reading(tenant) as conn:
        rows = conn.execute(
            load_statement(f"memory/{listing}_page.sql", keyset=keyset), params
        ).fetchall()
        counted = conn.execute(load_statement(f"memory/{listing}_count.sql"), params).fetchone()
    return rows, int(counted[0]) if counted else 0


def _next(
    listing: Listing,
    items: list[MemoryRecord] | list[FactRecord],
    rows: list[tuple[Any, ...]],
    offset: int,
    cursor: str | None,
) -> tuple[str | None, int | None]:
    """(next_cursor, next_offset) of a page whose query fetched one row beyond it; a page
    reached by cursor has no next offset."""
    if len(rows) <= len(items) or not items:
        return None, None
    last = items[-1]
    following = paging.encode(listing, (last.created_at, last.id))
    return following, offset + len(items) if cursor is None else None
