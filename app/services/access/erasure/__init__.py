"""Erasure ("right to be forgotten"): a person, a conversation, a source, rows, or a tenant.

Whatever one request removes goes in ONE transaction together with its audit
row, so an erasure is never left half done. A dry run performs the very same
deletion inside a savepoint and rolls it back: its report is, by construction,
the report the real run would give.

What goes, per target (everything inside the caller's tenant; row-level
security keeps other tenants out of reach):
- ``subject`` (+ ``aliases``): every row naming one of the names as a whole
  word, case-insensitively (turn speaker or text, memory text, fact subject,
  text or entities, gate previews, rejected texts and scorer notes, job payloads and errors,
  LLM errors, handoffs, contradiction reasons), the facts linked to their graph
  entities, their graph vertices (with edges and observation facts, in every graph
  backend that holds them: AGE and the relational tables), the
  windows holding their turns, the facts derived from those windows that have
  no surviving source turn, and the conversations left without turns.
- ``conversation_id``: the conversation, its turns, windows, facts, the gate
  decisions of its windows, its jobs and handoffs.
- ``source``: every memory, fact, conversation and gate decision of that source
  and everything hanging off them.
- ``memory_ids`` / ``fact_ids``: those rows and every fact derived from the
  memories, with their links, gate decisions, feedback, contradictions, jobs.
- ``tenant``: every row of the tenant in every table (the audit log excepted:
  it holds no memory text), its graph (AGE schema, relational rows) and its API keys.

The package: ``request`` (EraseIn, what may be asked), ``rows`` (inside one tenant: what
goes and deleting it), ``tenant`` (a whole tenant), ``report`` (the report and the audit
row). The statements are in sql/erasure/, each with a header saying what it erases and why.
"""

from __future__ import annotations

from app.config import validate_tenant_id
from app.errors import InvalidInput
from app.services.access.erasure.report import (
    ConversationTarget,
    EraseTarget,
    ErasureReport,
    GraphRemoval,
    IdsTarget,
    SourceTarget,
    SubjectTarget,
    TenantTarget,
)
from app.services.access.erasure.request import MAX_ALIASES, MAX_IDS, NAME_MAX_CHARS, EraseIn, Kind
from app.services.access.erasure.rows import TABLES, erase_rows, names_pattern
from app.services.access.erasure.tenant import (
    KEPT_TABLES,
    RELATIONAL_GRAPH_TABLES,
    count_tenant_rows,
    erase_tenant,
)
from app.services.runtime import Elephant

__all__ = [
    "KEPT_TABLES",
    "MAX_ALIASES",
    "MAX_IDS",
    "NAME_MAX_CHARS",
    "RELATIONAL_GRAPH_TABLES",
    "TABLES",
    "ConversationTarget",
    "EraseIn",
    "EraseTarget",
    "ErasureReport",
    "GraphRemoval",
    "IdsTarget",
    "Kind",
    "SourceTarget",
    "SubjectTarget",
    "TenantTarget",
    "count_tenant_rows",
    "erase",
    "names_pattern",
]


def erase(
    elephant: Elephant,
    tenant: str,
    request: EraseIn,
    *,
    actor: str | None = None,
    must_exist: bool = False,
) -> ErasureReport:
    """Erase one target of ``tenant``; ``actor`` (an API key prefix, None for the CLI) is
    audited. ``must_exist``: unknown memory or fact ids are a NotFound, nothing is removed."""
    try:
        validate_tenant_id(tenant)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
    if request.kind == "tenant":
        return erase_tenant(elephant, tenant, request, actor)
    return erase_rows(elephant, tenant, request, actor, must_exist)
