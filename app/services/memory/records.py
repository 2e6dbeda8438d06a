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
transaction and the deletion is audited.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

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


def _after(listing: str, cursor: str | None) -> dict[str, Any]:
    """The keyset parameters of a page: after (created_at, id) of the cursor's row."""
    if cursor is None:
        return {"after_at": None, "after_id": None}
    after_at, after_id = paging.decode(listing, cursor, (datetime, UUID))
    return {"after_at": after_at, "after_id": after_id}


# ------------------------------------------------------------------ memories

_MEMORY_COLUMNS = """
    m.id::text, m.kind, m.text, m.source, m.importance, m.conversation_id::text, c.external_id,
    m.turn_start, m.turn_end, m.source_turn_ids, m.event_at, m.created_at, m.seen_count,
    coalesce((SELECT a.access_count FROM access_stats AS a
               WHERE a.tenant_id = m.tenant_id AND a.item_id = m.id), 0),
    (SELECT a.last_accessed_at FROM access_stats AS a
      WHERE a.tenant_id = m.tenant_id AND a.item_id = m.id),
    m.metadata, m.embedding IS NOT NULL,
    (SELECT count(*) FROM facts AS f WHERE f.tenant_id = m.tenant_id AND f.memory_id = m.id)::int"""
_MEMORY_FROM = (
    "FROM memories AS m LEFT JOIN conversations AS c "
    "ON c.tenant_id = m.tenant_id AND c.id = m.conversation_id"
)
# One filter block for the page and its total; a conversation is named by either id.
_MEMORY_FILTER = """
    WHERE m.tenant_id = %(tenant)s
      AND (%(kind)s::text IS NULL OR m.kind = %(kind)s)
      AND (%(source)s::text IS NULL OR m.source = %(source)s)
      AND (%(conversation)s::text IS NULL OR c.external_id = %(conversation)s
           OR m.conversation_id = %(conversation_uuid)s)"""


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
    params = {
        "kind": kind,
        "source": source,
        "conversation": conversation,
        "conversation_uuid": _as_uuid(conversation),
        "limit": limit,
        "offset": offset,
        **_after("memories", cursor),
    }
    rows, total = _page(
        elephant, tenant, _MEMORY_COLUMNS, f"{_MEMORY_FROM} {_MEMORY_FILTER}", "m", params
    )
    items = [MemoryRecord(*row) for row in rows[:limit]]
    return MemoryPage(items, total, offset, limit, *_next("memories", items, rows, params))


def get_memory(
    elephant: Elephant, tenant: str, memory_id: UUID, *, record_access: bool = True
) -> MemoryRecord:
    """``record_access`` False: looking, not using (the console), leaves its activation."""
    row = _one(
        elephant,
        tenant,
        f"SELECT {_MEMORY_COLUMNS} {_MEMORY_FROM} WHERE m.tenant_id = %(tenant)s AND m.id = %(id)s",
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
            "UPDATE memories SET importance = coalesce(%s, importance), "
            "source = coalesce(%s, source), metadata = %s::jsonb WHERE tenant_id = %s AND id = %s",
            (patch.importance, patch.source, json.dumps(metadata), tenant, memory_id),
        )
        if patch.source is not None:
            conn.execute(
                "UPDATE facts SET source = %s WHERE tenant_id = %s AND memory_id = %s",
                (patch.source, tenant, memory_id),
            )
        updated = conn.execute(
            f"SELECT {_MEMORY_COLUMNS} {_MEMORY_FROM} "
            "WHERE m.tenant_id = %(tenant)s AND m.id = %(id)s",
            {"tenant": tenant, "id": memory_id},
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

_FACT_COLUMNS = """
    f.id::text, f.text, f.subject, f.fact_type, f.confidence, f.importance, f.status,
    f.valid_from, f.valid_to, f.recorded_at, f.expired_at, f.superseded_by::text,
    f.memory_id::text, f.conversation_id::text, f.source, f.source_turn_ids, f.observation_kind,
    coalesce((SELECT jsonb_agg(jsonb_build_object('key', fe.entity_key, 'link', fe.link)
                               ORDER BY fe.link, fe.entity_key)
              FROM fact_entities AS fe
             WHERE fe.tenant_id = f.tenant_id AND fe.fact_id = f.id), '[]'::jsonb),
    f.metadata, f.created_at"""
# Where the entity links sit in a row: the columns are in FactRecord's field order.
_ENTITIES = [f.name for f in fields(FactRecord)].index("entities")
_FACT_FILTER = """
    WHERE f.tenant_id = %(tenant)s
      AND (%(status)s::text IS NULL OR f.status = %(status)s)
      AND (%(source)s::text IS NULL OR f.source = %(source)s)
      AND (%(memory_id)s::uuid IS NULL OR f.memory_id = %(memory_id)s)
      AND (%(subject)s::text IS NULL OR lower(f.subject) = lower(%(subject)s))
      AND (%(fact_type)s::text IS NULL OR f.fact_type = %(fact_type)s)
      AND (%(as_of)s::timestamptz IS NULL OR (f.status <> 'retracted'
           AND (f.valid_from IS NULL OR f.valid_from <= %(as_of)s)
           AND (f.valid_to IS NULL OR f.valid_to > %(as_of)s)))"""


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
    params = {
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
    rows, total = _page(
        elephant, tenant, _FACT_COLUMNS, f"FROM facts AS f {_FACT_FILTER}", "f", params
    )
    items = [_fact(row) for row in rows[:limit]]
    return FactPage(items, total, offset, limit, *_next("facts", items, rows, params))


def get_fact(
    elephant: Elephant, tenant: str, fact_id: UUID, *, record_access: bool = True
) -> FactRecord:
    """``record_access`` False: looking, not using (the console), leaves its activation."""
    row = _one(
        elephant,
        tenant,
        f"SELECT {_FACT_COLUMNS} FROM facts AS f WHERE f.tenant_id = %(tenant)s AND f.id = %(id)s",
        fact_id,
    )
    if row is None:
        raise NotFound(f"no fact with id {fact_id} in this tenant")
    if record_access:
        elephant.access.record(tenant, [], [str(fact_id)])  # a use: refreshes its activation
    return _fact(row)


def _one(elephant: Elephant, tenant: str, query: str, row_id: UUID) -> tuple[Any, ...] | None:
    """One row by id (``query`` takes ``%(tenant)s`` and ``%(id)s``): from a replica, and
    from the primary when the replica has not got it yet (a client that reads back what it
    just wrote must not see a 404 from lag)."""
    for consistency in ("replica", "primary"):
        with elephant.db.reading(tenant, consistency) as conn:
            row = conn.execute(query, {"tenant": tenant, "id": row_id}).fetchone()
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
    elephant: Elephant,
    tenant: str,
    columns: str,
    source: str,
    alias: str,
    params: dict[str, Any],
) -> tuple[list[tuple[Any, ...]], int]:
    """One page plus one row (is there a next page?), newest first, after the cursor's row
    when there is one, and the total the same filter matches (one transaction, on a
    replica when there is one). ``columns`` and ``source`` are this module's constants,
    never a caller's text."""
    keyset = (
        f" AND ({alias}.created_at, {alias}.id) < (%(after_at)s, %(after_id)s)"
        if params["after_at"] is not None
        else ""
    )
    params = {**params, "tenant": tenant}  # the filters name it (``WHERE x.tenant_id = ...``)
    with elephant.db.reading(tenant) as conn:
        rows = conn.execute(
            f"SELECT {columns} {source}{keyset} "
            f"ORDER BY {alias}.created_at DESC, {alias}.id DESC "
            "LIMIT %(limit)s + 1 OFFSET %(offset)s",
            params,
        ).fetchall()
        counted = conn.execute(f"SELECT count(*) {source}", params).fetchone()
    return rows, int(counted[0]) if counted else 0


def _next(
    listing: str,
    items: list[MemoryRecord] | list[FactRecord],
    rows: list[tuple[Any, ...]],
    params: dict[str, Any],
) -> tuple[str | None, int | None]:
    """(next_cursor, next_offset) of a page whose query fetched one row beyond it."""
    if len(rows) <= len(items) or not items:
        return None, None
    last = items[-1]
    cursor = paging.encode(listing, (last.created_at, last.id))
    by_offset = params["after_at"] is None
    return cursor, params["offset"] + len(items) if by_offset else None
