"""Erasure inside one tenant: a subject, a conversation, a source, or memory and fact ids.

The target is first expanded into a selection (the conversations, turns, memories,
facts and graph vertices that go), then every table is deleted from in dependency order
(``TABLES``), each statement counting its rows: nothing is left to a cascade. The
statements are in sql/erasure/ (``subject_*`` and the other selects, ``delete_<table>``),
each with a header saying what it erases and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from app.db.resources import load_sql
from app.db.runtime import Connection, SQLParams
from app.errors import NotFound
from app.services.access.erasure.report import (
    ConversationTarget,
    EraseTarget,
    ErasureReport,
    GraphRemoval,
    IdsTarget,
    SourceTarget,
    SubjectTarget,
    audit_erasure,
)
from app.services.access.erasure.request import EraseIn
from app.services.graph.backend import present
from app.services.graph.store import GraphStore, entity_key
from app.services.runtime import Elephant

# Tables an erasure inside a tenant reports on, in the order rows are deleted
# (children before the rows they reference): sql/erasure/delete_<table>.sql.
TABLES = (
    "contradictions", "feedback", "fact_entities", "facts", "admission_log", "passages",
    "memory_entities", "memories", "turns", "jobs", "handoffs", "llm_usage", "conversations",
)  # fmt: skip


@dataclass
class _Selection:
    """What goes. Ids are text (uuids) or integers (turns); sets grow as targets expand."""

    tenant: str  # named in every statement too (a pooler or Citus routes on it)
    conversations: set[str] = field(default_factory=set)
    turns: set[int] = field(default_factory=set)
    memories: set[str] = field(default_factory=set)
    facts: set[str] = field(default_factory=set)
    vertices: set[str] = field(default_factory=set)  # entity keys
    pattern: str | None = None  # the subject's names, whole words (regex for ~*)
    source: str | None = None  # gate decisions of this source go too


def erase_rows(
    elephant: Elephant, tenant: str, request: EraseIn, actor: str | None, must_exist: bool
) -> ErasureReport:
    with elephant.db.tenant(tenant) as conn:
        # FOR UPDATE on the tenant row conflicts with the key-share lock every insert into a
        # table referencing tenants takes: the tenant's writes wait until the erasure ends.
        conn.execute("SELECT 1 FROM tenants WHERE id = %s FOR UPDATE", (tenant,))
        with conn.transaction(force_rollback=request.dry_run):
            target, selection = _select(elephant, conn, tenant, request)
            missing = target.missing if isinstance(target, IdsTarget | ConversationTarget) else []
            if must_exist and missing:
                raise NotFound(_missing_message(missing, request))
            removed, graph = _remove(elephant, conn, tenant, selection)
        report = ErasureReport(target, request.dry_run, removed, graph)
        audit_erasure(conn, tenant, actor, request, report)
    return report


def _missing_message(missing: list[str], request: EraseIn) -> str:
    kind = "memory" if request.memory_ids else "fact"
    return f"no {kind} with id {missing[0]} in this tenant"


# ------------------------------------------------------------------ what goes


def _select(
    elephant: Elephant, conn: Connection, tenant: str, request: EraseIn
) -> tuple[EraseTarget, _Selection]:
    kind = request.kind
    if kind == "subject":
        return _select_subject(elephant, conn, tenant, request.names)
    if kind == "conversation":
        return _select_conversation(conn, tenant, str(request.conversation_id))
    if kind == "source":
        return _select_source(conn, tenant, str(request.source))
    return _select_ids(conn, tenant, request.memory_ids, request.fact_ids)


def _ids(conn: Connection, query: str, params: Sequence[object] | SQLParams) -> set[str]:
    return {str(row[0]) for row in conn.execute(query, params).fetchall()}


def names_pattern(names: Sequence[str]) -> str:
    """A POSIX regular expression (for ``~*``) matching any of the names as a whole word:
    not inside a longer word, any case, any run of whitespace between a name's words."""

    def escape(text: str) -> str:
        return "".join(ch if ch.isalnum() else "\\" + ch for ch in text)

    alternatives = ["[[:space:]]+".join(escape(part) for part in name.split()) for name in names]
    return f"(^|[^[:alnum:]_])({'|'.join(alternatives)})($|[^[:alnum:]_])"


def _select_subject(
    elephant: Elephant, conn: Connection, tenant: str, names: list[str]
) -> tuple[SubjectTarget, _Selection]:
    """Every row naming the subject (sql/erasure/subject_*.sql). A name is matched in
    values only, never JSON keys or enumerated columns (kind, status, model): erasing
    "Claude" must not take every row scored by claude-haiku."""
    pattern = names_pattern(names)
    selection = _Selection(tenant=tenant, pattern=pattern)
    selection.vertices = _vertices(elephant, conn, tenant, {entity_key(n) for n in names}, pattern)
    links = sorted({entity_key(n) for n in names} | selection.vertices)
    selection.conversations = _ids(
        conn, load_sql("erasure/subject_conversations.sql"), {"tenant": tenant, "p": pattern}
    )
    rows = conn.execute(
        load_sql("erasure/subject_turns.sql"), {"tenant": tenant, "p": pattern}
    ).fetchall()
    selection.turns = {int(row[0]) for row in rows}
    selection.conversations |= _emptied(
        conn, tenant, {str(row[1]) for row in rows}, selection.turns
    )
    _add_conversation_contents(conn, selection)
    selection.memories |= _ids(
        conn,
        load_sql("erasure/subject_memories.sql"),
        {"tenant": tenant, "turns": sorted(selection.turns), "p": pattern},
    )
    selection.facts = _ids(
        conn,
        load_sql("erasure/subject_facts.sql"),
        {"tenant": tenant, "p": pattern, "keys": links},
    )
    _add_derived_facts(conn, selection, every=False)
    return SubjectTarget(names=names), selection


def _emptied(conn: Connection, tenant: str, conversations: set[str], turns: set[int]) -> set[str]:
    """Conversations every one of whose turns is going."""
    return _ids(
        conn,
        load_sql("erasure/emptied_conversations.sql"),
        {"tenant": tenant, "convs": sorted(conversations), "turns": sorted(turns)},
    )


def _select_conversation(
    conn: Connection, tenant: str, ident: str
) -> tuple[ConversationTarget, _Selection]:
    try:
        as_uuid: UUID | None = UUID(ident)
    except ValueError:
        as_uuid = None
    selection = _Selection(tenant=tenant)
    selection.conversations = _ids(
        conn,
        "SELECT id FROM conversations WHERE tenant_id = %s AND (external_id = %s OR id = %s)",
        (tenant, ident, as_uuid),
    )
    _add_conversation_contents(conn, selection)
    _add_derived_facts(conn, selection, every=True)
    missing = [ident] if not selection.conversations else []
    return ConversationTarget(conversation_id=ident, missing=missing), selection


def _select_source(conn: Connection, tenant: str, source: str) -> tuple[SourceTarget, _Selection]:
    selection = _Selection(tenant=tenant, source=source)
    selection.conversations = _ids(
        conn, "SELECT id FROM conversations WHERE tenant_id = %s AND source = %s", (tenant, source)
    )
    _add_conversation_contents(conn, selection)
    selection.memories |= _ids(
        conn, "SELECT id FROM memories WHERE tenant_id = %s AND source = %s", (tenant, source)
    )
    selection.facts = _ids(
        conn, "SELECT id FROM facts WHERE tenant_id = %s AND source = %s", (tenant, source)
    )
    _add_derived_facts(conn, selection, every=True)
    return SourceTarget(source=source), selection


def _select_ids(
    conn: Connection, tenant: str, memory_ids: list[UUID], fact_ids: list[UUID]
) -> tuple[IdsTarget, _Selection]:
    selection = _Selection(tenant=tenant)
    selection.memories = _ids(
        conn, "SELECT id FROM memories WHERE tenant_id = %s AND id = ANY(%s)", (tenant, memory_ids)
    )
    selection.facts = _ids(
        conn, "SELECT id FROM facts WHERE tenant_id = %s AND id = ANY(%s)", (tenant, fact_ids)
    )
    _add_derived_facts(conn, selection, every=True)
    asked = [str(i) for i in memory_ids] + [str(i) for i in fact_ids]
    found = selection.memories | selection.facts
    missing = [i for i in dict.fromkeys(asked) if i not in found]
    target = IdsTarget(memory_ids=len(memory_ids), fact_ids=len(fact_ids), missing=missing)
    return target, selection


def _add_conversation_contents(conn: Connection, selection: _Selection) -> None:
    params = (selection.tenant, sorted(selection.conversations))
    selection.turns |= {
        int(row[0])
        for row in conn.execute(
            "SELECT id FROM turns WHERE tenant_id = %s AND conversation_id = ANY(%s::uuid[])",
            params,
        ).fetchall()
    }
    selection.memories |= _ids(
        conn,
        "SELECT id FROM memories WHERE tenant_id = %s AND conversation_id = ANY(%s::uuid[])",
        params,
    )


def _add_derived_facts(conn: Connection, selection: _Selection, *, every: bool) -> None:
    """Facts of removed conversations and of removed memories (sql/erasure/
    derived_facts.sql). For a subject (``every`` False) a fact of a removed window stays
    while one of its recorded source turns stays."""
    selection.facts |= _ids(
        conn,
        load_sql("erasure/derived_facts.sql"),
        {
            "tenant": selection.tenant,
            "convs": sorted(selection.conversations),
            "memories": sorted(selection.memories),
            "every": every,
            "turns": sorted(selection.turns),
        },
    )


# ------------------------------------------------------------------ the graph of one tenant


def _graph_stores(elephant: Elephant, conn: Connection, tenant: str) -> list[GraphStore]:
    """Every backend that holds rows of the tenant's graph: the one in use, and the other
    one too when it still has a copy (``elephant graph migrate`` copies, it never moves)."""
    stores = [elephant.graph_store(backend) for backend in present(elephant.db.capabilities)]
    return [store for store in stores if store.exists(conn, tenant)]


def _vertices(
    elephant: Elephant, conn: Connection, tenant: str, keys: set[str], pattern: str
) -> set[str]:
    """Entity keys of the subject's vertices: its names' keys, and entities whose name
    names them (a vertex 'Ada Lovelace's notebook' goes with Ada Lovelace)."""
    found: set[str] = set()
    for store in _graph_stores(elephant, conn, tenant):
        found |= store.named(conn, tenant, sorted(keys), pattern)
    return found


def _observation_facts(conn: Connection, tenant: str, vertices: set[str]) -> set[str]:
    """A vertex's observations go with it (as graph delete_entities does); facts that only
    mention it stay unless the target itself reaches them."""
    return _ids(conn, load_sql("erasure/observation_facts.sql"), (tenant, sorted(vertices)))


def _remove_vertices(
    elephant: Elephant, conn: Connection, tenant: str, vertices: set[str]
) -> GraphRemoval:
    """The vertices and their edges, in every backend holding them (rows removed: an
    entity copied into both backends counts twice)."""
    if not vertices:
        return GraphRemoval()
    removed = edges = 0
    for store in _graph_stores(elephant, conn, tenant):
        edges += store.count_relations(conn, tenant, sorted(vertices))
        removed += store.delete_entities(conn, tenant, sorted(vertices))
    return GraphRemoval(vertices=removed, edges=edges)


# ------------------------------------------------------------------ deleting


def _remove(
    elephant: Elephant, conn: Connection, tenant: str, selection: _Selection
) -> tuple[dict[str, int], GraphRemoval]:
    """Delete in dependency order, counting each table (nothing is left to a cascade)."""
    selection.facts |= _observation_facts(conn, tenant, selection.vertices)
    params = _parameters(conn, selection)
    removed = {
        table: conn.execute(load_sql(f"erasure/delete_{table}.sql"), params).rowcount
        for table in TABLES
    }
    graph = _remove_vertices(elephant, conn, tenant, selection.vertices)
    return {table: removed[table] for table in sorted(removed)}, graph


def _parameters(conn: Connection, selection: _Selection) -> SQLParams:
    """The selection as statement parameters, plus what must be read before rows go:
    content hashes of the memories, transaction stamps of the conversations' turns (to find
    their rejected windows in the gate log), and (conversation, seq) of each turn (jobs)."""
    params: dict[str, Any] = {
        "tenant": selection.tenant,
        "facts": sorted(selection.facts),
        "memories": sorted(selection.memories),
        "turns": sorted(selection.turns),
        "convs": sorted(selection.conversations),
        "keys": sorted(selection.vertices),
        "p": selection.pattern,
        "source": selection.source,
    }
    params["ids"] = params["facts"] + params["memories"] + params["convs"]
    params["hashes"] = [
        str(row[0])
        for row in conn.execute(load_sql("erasure/content_hashes.sql"), params).fetchall()
    ]
    stamps = conn.execute(load_sql("erasure/turn_stamps.sql"), params).fetchall()
    params["stamps"] = [row[0] for row in stamps]
    params["stamp_sources"] = [row[1] for row in stamps]
    turns = conn.execute(load_sql("erasure/turn_positions.sql"), params).fetchall()
    params["turn_convs"] = [row[0] for row in turns]
    params["turn_seqs"] = [row[1] for row in turns]
    return params
