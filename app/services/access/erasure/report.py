"""What an erasure reports (rows per table, graph vertices and edges) and the audit row
it leaves, which never holds what was erased."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

from app.db.runtime import Connection
from app.services.access import audit
from app.services.access.erasure.request import EraseIn


@dataclass(frozen=True, slots=True, kw_only=True)
class SubjectTarget:
    kind: Literal["subject"] = "subject"
    names: list[str]  # the subject and its aliases


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationTarget:
    kind: Literal["conversation"] = "conversation"
    conversation_id: str  # as the caller named it
    missing: list[str]  # the id, when no conversation has it


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceTarget:
    kind: Literal["source"] = "source"
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class IdsTarget:
    kind: Literal["ids"] = "ids"
    memory_ids: int  # how many were asked for
    fact_ids: int
    missing: list[str]  # asked-for ids not found in the tenant


@dataclass(frozen=True, slots=True, kw_only=True)
class TenantTarget:
    kind: Literal["tenant"] = "tenant"
    tenant: str


EraseTarget = SubjectTarget | ConversationTarget | SourceTarget | IdsTarget | TenantTarget


@dataclass(frozen=True, slots=True)
class GraphRemoval:
    vertices: int = 0
    edges: int = 0
    schema_dropped: bool = False


@dataclass(frozen=True, slots=True)
class ErasureReport:
    """What one erasure removed (or, in a dry run, would remove): rows per table."""

    target: EraseTarget
    dry_run: bool
    removed: dict[str, int]  # table -> rows
    graph: GraphRemoval
    total: int = field(init=False)  # rows of every table plus graph vertices and edges

    def __post_init__(self) -> None:
        total = sum(self.removed.values()) + self.graph.vertices + self.graph.edges
        object.__setattr__(self, "total", total)


def audit_erasure(
    conn: Connection, tenant: str, actor: str | None, request: EraseIn, report: ErasureReport
) -> None:
    """The audit row never holds what was erased: a name, source or conversation id is kept
    as a digest, memory and fact ids as counts."""
    kind = request.kind
    if kind == "subject":
        target = f"subject {audit.digest(request.names[0])}"
    elif kind == "conversation":
        target = f"conversation {audit.digest(str(request.conversation_id))}"
    elif kind == "source":
        target = f"source {audit.digest(str(request.source))}"
    elif kind == "ids":
        target = f"{len(request.memory_ids)} memories, {len(request.fact_ids)} facts"
    else:
        target = "tenant"
    audit.write(
        conn,
        tenant=tenant,
        key_prefix=actor,
        action="erase",
        target=target,
        detail={
            "kind": kind,
            "dry_run": report.dry_run,
            "aliases": len(request.aliases),
            "removed": report.removed,
            "graph": asdict(report.graph),
            "total": report.total,
        },
    )
