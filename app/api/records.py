"""Erasure and records endpoints: erase a target; list, read, update and delete memories;
list, read and delete facts, and read a fact's history. Lists page by ``cursor``
(``offset`` still works)."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from litestar import Controller, delete, get, patch, post
from litestar.di import NamedDependency
from litestar.params import JSONBody, Parameter, PathParameter

from app.api.params import Cursor
from app.api.routes import Runtime, Tenant, route
from app.services.access.auth import Principal
from app.services.access.erasure import EraseIn, ErasureReport, erase
from app.services.common.inputs import parse_instant
from app.services.facts import history as fact_history
from app.services.memory import records
from app.web.route_access import ADMIN, READ, WRITE

Limit = Annotated[int, Parameter(ge=1, le=records.MAX_LIMIT, description="1-200 per page.")]
Offset = Annotated[
    int, Parameter(ge=0, le=records.MAX_OFFSET, description="Rows to skip (prefer cursor).")
]
MemoryId = Annotated[UUID, PathParameter(description="The memory's id.")]
FactId = Annotated[UUID, PathParameter(description="The fact's id.")]
Source = Annotated[str | None, Parameter(min_length=1, max_length=100, description="Source.")]


class RecordsController(Controller):
    tags = ["records"]

    @route(
        post,
        "/erase",
        ADMIN,
        "Erase a subject, conversation, source, rows or the whole tenant (dry_run first)",
        status_code=200,
    )
    def erase(
        self,
        principal: NamedDependency[Principal],
        elephant: Runtime,
        tenant: Tenant,
        data: JSONBody[EraseIn],
    ) -> ErasureReport:
        return erase(elephant, tenant, data, actor=principal.prefix)

    # ------------------------------------------------------------ memories

    @route(get, "/memories", READ, "Memories, newest first, paged")
    def list_memories(
        self,
        tenant: Tenant,
        elephant: Runtime,
        kind: Annotated[records.MemoryKind | None, Parameter(description="note or window.")] = None,
        source: Source = None,
        conversation: Annotated[
            str | None, Parameter(min_length=1, max_length=200, description="Id or uuid.")
        ] = None,
        limit: Limit = 50,
        offset: Offset = 0,
        cursor: Cursor = None,
    ) -> records.MemoryPage:
        return records.list_memories(
            elephant,
            tenant,
            kind=kind,
            source=source,
            conversation=conversation,
            limit=limit,
            offset=offset,
            cursor=cursor,
        )

    @route(get, "/memories/{memory_id:uuid}", READ, "One memory with its facts count")
    def get_memory(
        self, tenant: Tenant, elephant: Runtime, memory_id: MemoryId
    ) -> records.MemoryRecord:
        return records.get_memory(elephant, tenant, memory_id)

    @route(
        patch,
        "/memories/{memory_id:uuid}",
        WRITE,
        "Change a memory's importance, source or metadata (its text is evidence: "
        "commit a correction instead)",
    )
    def update_memory(
        self,
        tenant: Tenant,
        elephant: Runtime,
        memory_id: MemoryId,
        data: JSONBody[records.MemoryPatch],
    ) -> records.MemoryRecord:
        return records.update_memory(elephant, tenant, memory_id, data)

    @route(
        delete,
        "/memories/{memory_id:uuid}",
        ADMIN,
        "Delete a memory and what was derived from it; returns the erasure report",
        status_code=200,
    )
    def delete_memory(
        self,
        principal: NamedDependency[Principal],
        elephant: Runtime,
        tenant: Tenant,
        memory_id: MemoryId,
    ) -> ErasureReport:
        return records.delete_memory(elephant, tenant, memory_id, actor=principal.prefix)

    # ------------------------------------------------------------ facts

    @route(get, "/facts", READ, "Facts, newest first, paged")
    def list_facts(
        self,
        tenant: Tenant,
        elephant: Runtime,
        status: Annotated[
            records.FactStatus | None, Parameter(description="active, superseded or retracted.")
        ] = None,
        source: Source = None,
        memory_id: Annotated[UUID | None, Parameter(description="Facts of this memory.")] = None,
        subject: Annotated[
            str | None,
            Parameter(max_length=200, description="Facts about this subject (any case)."),
        ] = None,
        fact_type: Annotated[
            records.FactType | None, Parameter(description="world, experience or inference.")
        ] = None,
        as_of: Annotated[
            str | None,
            Parameter(
                max_length=100,
                description="Facts true at this instant (not retracted), as search's as_of: "
                "ISO 8601, a date, or '1:56 pm on 8 May, 2023'.",
            ),
        ] = None,
        limit: Limit = 50,
        offset: Offset = 0,
        cursor: Cursor = None,
    ) -> records.FactPage:
        return records.list_facts(
            elephant,
            tenant,
            status=status,
            source=source,
            memory_id=memory_id,
            subject=subject,
            fact_type=fact_type,
            as_of=parse_instant("as_of", as_of),
            limit=limit,
            offset=offset,
            cursor=cursor,
        )

    @route(get, "/facts/{fact_id:uuid}", READ, "One fact")
    def get_fact(self, tenant: Tenant, elephant: Runtime, fact_id: FactId) -> records.FactRecord:
        return records.get_fact(elephant, tenant, fact_id)

    @route(
        get,
        "/facts/{fact_id:uuid}/history",
        READ,
        "A fact's timeline: validity, what it replaced, what replaced it, and why",
    )
    def get_fact_history(
        self, tenant: Tenant, elephant: Runtime, fact_id: FactId
    ) -> fact_history.FactHistory:
        return fact_history.history(elephant, tenant, fact_id)

    @route(
        delete,
        "/facts/{fact_id:uuid}",
        ADMIN,
        "Delete a fact with its links; returns the erasure report",
        status_code=200,
    )
    def delete_fact(
        self,
        principal: NamedDependency[Principal],
        elephant: Runtime,
        tenant: Tenant,
        fact_id: FactId,
    ) -> ErasureReport:
        return records.delete_fact(elephant, tenant, fact_id, actor=principal.prefix)
