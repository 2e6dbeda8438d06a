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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal
from uuid import UUID

from psycopg import sql
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.config import validate_tenant_id
from app.db.runtime import TENANT_SETTING, Connection
from app.errors import ElephantError, InvalidInput, NotFound
from app.services.access import audit, keys
from app.services.graph.age import graph_name
from app.services.graph.backend import present
from app.services.graph.store import GraphStore, entity_key
from app.services.runtime import Elephant

MAX_IDS = 1000
MAX_ALIASES = 20
NAME_MAX_CHARS = 200
# Tables an erasure inside a tenant reports on, in the order rows are deleted
# (children before the rows they reference).
TABLES = (
    "contradictions", "feedback", "fact_entities", "facts", "admission_log", "passages",
    "memories", "turns", "jobs", "handoffs", "llm_usage", "conversations",
)  # fmt: skip
# Kept on erasure of a whole tenant: the record that the erasure happened (no memory text).
KEPT_TABLES = frozenset({"audit_log"})
# The relational graph backend's tables (entities, relations): reported as graph vertices
# and edges, not as rows.
RELATIONAL_GRAPH_TABLES = ("kg_entities", "kg_relations")

Kind = Literal["tenant", "subject", "conversation", "source", "ids"]


# ------------------------------------------------------------------ input


def _clean(value: str, what: str) -> str:
    if "\x00" in value:
        raise ValueError(f"{what} must not contain NUL characters (\\x00)")
    if not value:
        raise ValueError(f"{what} must not be empty")
    return value


def _name(value: str, what: str) -> str:
    value = _clean(value.strip(), what)
    if len(value) < 2 or not any(ch.isalnum() for ch in value):
        raise ValueError(f"{what} must be a name of at least 2 characters with a letter or digit")
    if len(value) > NAME_MAX_CHARS:
        raise ValueError(f"{what} must be at most {NAME_MAX_CHARS} characters")
    return value


class EraseIn(BaseModel):
    """Exactly one target per request; ``dry_run`` reports without deleting."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    tenant: bool = Field(
        False, description="Erase the whole tenant: every row, its graph and its API keys."
    )
    subject: str | None = Field(
        None, description="A person or entity: everything naming them (whole word, any case)."
    )
    aliases: list[str] = Field(
        default_factory=list, description="Other names of the subject (at most 20)."
    )
    conversation_id: str | None = Field(
        None, max_length=200, description="A conversation: your id for it, or its uuid."
    )
    source: str | None = Field(
        None, max_length=100, description="Every memory, fact and conversation of this source."
    )
    memory_ids: list[UUID] = Field(default_factory=list, description="Memories to erase.")
    fact_ids: list[UUID] = Field(default_factory=list, description="Facts to erase.")
    dry_run: bool = Field(False, description="Report what would be removed; remove nothing.")

    @field_validator("subject")
    @classmethod
    def _subject(cls, value: str | None) -> str | None:
        return None if value is None else _name(value, "subject")

    @field_validator("aliases")
    @classmethod
    def _aliases(cls, values: list[str]) -> list[str]:
        if len(values) > MAX_ALIASES:
            raise ValueError(f"at most {MAX_ALIASES} aliases per request")
        return list(dict.fromkeys(_name(value, "each alias") for value in values))

    @field_validator("conversation_id", "source")
    @classmethod
    def _text(cls, value: str | None) -> str | None:
        return None if value is None else _clean(value, "the value")

    @model_validator(mode="after")
    def _one_target(self) -> EraseIn:
        given = [
            name
            for name, present in (
                ("tenant", self.tenant),
                ("subject", self.subject is not None),
                ("conversation_id", self.conversation_id is not None),
                ("source", self.source is not None),
                ("memory_ids/fact_ids", bool(self.memory_ids or self.fact_ids)),
            )
            if present
        ]
        if not given:
            raise ValueError(
                "name what to erase: one of tenant (true), subject, conversation_id, source, "
                "memory_ids/fact_ids"
            )
        if len(given) > 1:
            raise ValueError(f"erase one kind of target per request, not {' and '.join(given)}")
        if self.aliases and self.subject is None:
            raise ValueError("aliases need a subject")
        count = len(self.memory_ids) + len(self.fact_ids)
        if count > MAX_IDS:
            raise ValueError(f"{count} ids; at most {MAX_IDS} per request: split the erasure")
        return self

    @property
    def kind(self) -> Kind:
        if self.tenant:
            return "tenant"
        if self.subject is not None:
            return "subject"
        if self.conversation_id is not None:
            return "conversation"
        return "source" if self.source is not None else "ids"

    @property
    def names(self) -> list[str]:
        return [] if self.subject is None else list(dict.fromkeys([self.subject, *self.aliases]))


# ------------------------------------------------------------------ report


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


# ------------------------------------------------------------------ entry point


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
        return _erase_tenant(elephant, tenant, request, actor)
    return _erase_rows(elephant, tenant, request, actor, must_exist)


def _audit(
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


# ------------------------------------------------------------------ inside one tenant


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


def _erase_rows(
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
        _audit(conn, tenant, actor, request, report)
    return report


def _missing_message(missing: list[str], request: EraseIn) -> str:
    kind = "memory" if request.memory_ids else "fact"
    return f"no {kind} with id {missing[0]} in this tenant"


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


def _ids(conn: Connection, query: str, params: Sequence[Any] | dict[str, Any]) -> set[str]:
    return {str(row[0]) for row in conn.execute(query, params).fetchall()}


def names_pattern(names: Sequence[str]) -> str:
    """A POSIX regular expression (for ``~*``) matching any of the names as a whole word:
    not inside a longer word, any case, any run of whitespace between a name's words."""

    def escape(text: str) -> str:
        return "".join(ch if ch.isalnum() else "\\" + ch for ch in text)

    alternatives = ["[[:space:]]+".join(escape(part) for part in name.split()) for name in names]
    return f"(^|[^[:alnum:]_])({'|'.join(alternatives)})($|[^[:alnum:]_])"


def _named(*columns: str, json: Sequence[str] = (), names: Sequence[str] = ()) -> str:
    """SQL that is true when the subject's pattern ``%(p)s`` matches one of the text
    ``columns``, a string value anywhere inside one of the ``json`` columns, or a ``name``
    of the entity list in one of the ``names`` columns. Values only, never JSON keys or
    enumerated columns (kind, status, model): erasing "Claude" must not take every row
    scored by claude-haiku. False when there is no pattern (not a subject erasure)."""
    tests = [f"{column} ~* %(p)s" for column in columns]
    tests += [
        f"EXISTS (SELECT 1 FROM jsonb_path_query({column}, "
        "'strict $.** ? (@.type() == \"string\")') AS v (s) WHERE v.s #>> '{}' ~* %(p)s)"
        for column in json
    ]
    tests += [
        f"EXISTS (SELECT 1 FROM jsonb_path_query({column}, 'lax $[*].name') AS v (s) "
        "WHERE v.s #>> '{}' ~* %(p)s)"
        for column in names
    ]
    return f"(%(p)s::text IS NOT NULL AND ({' OR '.join(tests)}))"


def _select_subject(
    elephant: Elephant, conn: Connection, tenant: str, names: list[str]
) -> tuple[SubjectTarget, _Selection]:
    pattern = names_pattern(names)
    selection = _Selection(tenant=tenant, pattern=pattern)
    selection.vertices = _vertices(elephant, conn, tenant, {entity_key(n) for n in names}, pattern)
    links = sorted({entity_key(n) for n in names} | selection.vertices)
    selection.conversations = _ids(
        conn,
        "SELECT id FROM conversations WHERE tenant_id = %(tenant)s "
        f"AND {_named('external_id', json=['metadata'])}",
        {"tenant": tenant, "p": pattern},
    )
    rows = conn.execute(
        "SELECT id, conversation_id FROM turns "
        f"WHERE tenant_id = %(tenant)s AND {_named('speaker', 'text', json=['metadata'])}",
        {"tenant": tenant, "p": pattern},
    ).fetchall()
    selection.turns = {int(row[0]) for row in rows}
    selection.conversations |= _emptied(
        conn, tenant, {str(row[1]) for row in rows}, selection.turns
    )
    _add_conversation_contents(conn, selection)
    selection.memories |= _ids(
        conn,
        "SELECT m.id FROM memories AS m JOIN turns AS t ON t.tenant_id = m.tenant_id "
        "AND t.conversation_id = m.conversation_id "
        "AND t.seq BETWEEN m.turn_start AND m.turn_end "
        "WHERE m.tenant_id = %(tenant)s AND t.id = ANY(%(turns)s) "
        "UNION SELECT id FROM memories "
        f"WHERE tenant_id = %(tenant)s AND {_named('text', json=['metadata'])}",
        {"tenant": tenant, "turns": sorted(selection.turns), "p": pattern},
    )
    selection.facts = _ids(
        conn,
        "SELECT id FROM facts WHERE tenant_id = %(tenant)s "
        f"AND {_named('subject', 'text', json=['metadata'], names=['entities'])} "
        "UNION SELECT fact_id FROM fact_entities "
        "WHERE tenant_id = %(tenant)s AND entity_key = ANY(%(keys)s)",
        {"tenant": tenant, "p": pattern, "keys": links},
    )
    _add_derived_facts(conn, selection, every=False)
    return SubjectTarget(names=names), selection


def _emptied(conn: Connection, tenant: str, conversations: set[str], turns: set[int]) -> set[str]:
    """Conversations every one of whose turns is going."""
    return _ids(
        conn,
        "SELECT c.id FROM conversations AS c WHERE c.tenant_id = %(tenant)s "
        "AND c.id = ANY(%(convs)s::uuid[]) AND NOT EXISTS (SELECT 1 FROM turns AS t "
        "WHERE t.tenant_id = c.tenant_id AND t.conversation_id = c.id "
        "AND t.id <> ALL(%(turns)s))",
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
    """Facts of removed conversations and of removed memories. For a subject (``every``
    False) a fact of a removed window stays while one of its recorded source turns stays:
    it came from someone else's words in the same window (its memory_id becomes null). A
    fact that records no source turn cannot be traced to a surviving one: it goes."""
    selection.facts |= _ids(
        conn,
        "SELECT f.id FROM facts AS f WHERE f.tenant_id = %(tenant)s "
        "AND (f.conversation_id = ANY(%(convs)s::uuid[]) "
        "OR (f.memory_id = ANY(%(memories)s::uuid[]) AND (%(every)s OR NOT EXISTS ("
        "  SELECT 1 FROM turns AS t WHERE t.tenant_id = f.tenant_id "
        "  AND t.conversation_id = f.conversation_id "
        "  AND coalesce(t.source_turn_id, '#' || t.seq) = ANY(f.source_turn_ids) "
        "  AND t.id <> ALL(%(turns)s)))))",
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
    return _ids(
        conn,
        "SELECT f.id FROM facts AS f JOIN fact_entities AS fe "
        "ON fe.tenant_id = f.tenant_id AND fe.fact_id = f.id "
        "WHERE f.tenant_id = %s AND fe.entity_key = ANY(%s) AND fe.link = 'about' "
        "AND f.observation_kind IS NOT NULL",
        (tenant, sorted(vertices)),
    )


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
    removed = {table: conn.execute(_DELETE[table], params).rowcount for table in TABLES}
    graph = _remove_vertices(elephant, conn, tenant, selection.vertices)
    return {table: removed[table] for table in sorted(removed)}, graph


def _parameters(conn: Connection, selection: _Selection) -> dict[str, Any]:
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
        for row in conn.execute(
            "SELECT content_hash FROM memories "
            "WHERE tenant_id = %(tenant)s AND id = ANY(%(memories)s::uuid[])",
            params,
        ).fetchall()
    ]
    stamps = conn.execute(
        "SELECT DISTINCT t.created_at, c.source FROM turns AS t JOIN conversations AS c "
        "ON c.tenant_id = t.tenant_id AND c.id = t.conversation_id "
        "WHERE c.tenant_id = %(tenant)s AND c.id = ANY(%(convs)s::uuid[])",
        params,
    ).fetchall()
    params["stamps"] = [row[0] for row in stamps]
    params["stamp_sources"] = [row[1] for row in stamps]
    turns = conn.execute(
        "SELECT conversation_id::text, seq FROM turns "
        "WHERE tenant_id = %(tenant)s AND id = ANY(%(turns)s)",
        params,
    ).fetchall()
    params["turn_convs"] = [row[0] for row in turns]
    params["turn_seqs"] = [row[1] for row in turns]
    return params


# Gate and handoff scorer notes are "offline (fallback: <provider> failed: <error>)": the
# error may quote the text, the rest names our provider.
_FALLBACK = "coalesce(substring({} from 'fallback: (.*)$'), '')"
_GATE_SCORER = _FALLBACK.format("x.scorer")
_DELETE: dict[str, str] = {
    "contradictions": f"""
        DELETE FROM contradictions AS x WHERE x.tenant_id = %(tenant)s
        AND (x.older_fact_id = ANY(%(facts)s::uuid[])
             OR x.newer_fact_id = ANY(%(facts)s::uuid[]) OR {_named("x.reason")})""",
    "feedback": """
        DELETE FROM feedback WHERE tenant_id = %(tenant)s
        AND (fact_id = ANY(%(facts)s::uuid[]) OR memory_id = ANY(%(memories)s::uuid[]))""",
    "fact_entities": """
        DELETE FROM fact_entities WHERE tenant_id = %(tenant)s
        AND (fact_id = ANY(%(facts)s::uuid[]) OR entity_key = ANY(%(keys)s))""",
    "facts": "DELETE FROM facts WHERE tenant_id = %(tenant)s AND id = ANY(%(facts)s::uuid[])",
    # A conversation's windows name it (migration 0011); those logged before that are
    # linked to it by nothing but the transaction that logged them: kind window, its
    # source, the transaction timestamp of its turns.
    "admission_log": f"""
        DELETE FROM admission_log AS x WHERE x.tenant_id = %(tenant)s
        AND (x.memory_id = ANY(%(memories)s::uuid[])
        OR x.conversation_id = ANY(%(convs)s::uuid[])
        OR x.content_hash = ANY(%(hashes)s) OR x.source = %(source)s
        OR (x.kind = 'window' AND (x.created_at, x.source) IN
            (SELECT * FROM unnest(%(stamps)s::timestamptz[], %(stamp_sources)s::text[])))
        OR {_named("x.text_preview", "x.rejected_text", "x.reason", _GATE_SCORER)})""",
    "passages": """
        DELETE FROM passages WHERE tenant_id = %(tenant)s
        AND (turn_id = ANY(%(turns)s) OR memory_id = ANY(%(memories)s::uuid[]))""",
    "memories": "DELETE FROM memories WHERE tenant_id = %(tenant)s "
    "AND id = ANY(%(memories)s::uuid[])",
    "turns": "DELETE FROM turns WHERE tenant_id = %(tenant)s AND id = ANY(%(turns)s)",
    # Runs after turns: a queued extraction job over a range that keeps other turns
    # stays, so those turns still get their facts (its payload holds ids and numbers).
    "jobs": f"""
        DELETE FROM jobs AS x
        WHERE x.tenant_id = %(tenant)s
        AND (EXISTS (SELECT 1 FROM jsonb_each_text(x.payload) AS kv
                     WHERE kv.value = ANY(%(ids)s::text[]))
        OR EXISTS (
            SELECT 1 FROM unnest(%(turn_convs)s::text[], %(turn_seqs)s::int[]) AS r (c, s)
            WHERE x.payload ->> 'conversation_id' = r.c
              AND r.s BETWEEN (x.payload ->> 'seq_from')::int AND (x.payload ->> 'seq_to')::int
              AND (x.status IN ('done', 'failed') OR NOT EXISTS (
                  SELECT 1 FROM turns AS t WHERE t.tenant_id = x.tenant_id
                  AND t.conversation_id::text = r.c
                  AND t.seq BETWEEN (x.payload ->> 'seq_from')::int
                                AND (x.payload ->> 'seq_to')::int)))
        OR {_named("x.last_error", json=["x.payload"])})""",
    "handoffs": f"""
        DELETE FROM handoffs AS x WHERE x.tenant_id = %(tenant)s
        AND (x.conversation_id = ANY(%(convs)s::uuid[])
        OR {
        _named(
            "x.project",
            "x.summary",
            _FALLBACK.format("x.generator"),
            json=["x.decisions", "x.open_questions", "x.next_steps", "x.metadata"],
        )
    })""",
    "llm_usage": "DELETE FROM llm_usage AS x "
    f"WHERE x.tenant_id = %(tenant)s AND {_named('x.error')}",
    "conversations": "DELETE FROM conversations WHERE tenant_id = %(tenant)s "
    "AND id = ANY(%(convs)s::uuid[])",
}


# ------------------------------------------------------------------ a whole tenant


def _erase_tenant(
    elephant: Elephant, tenant: str, request: EraseIn, actor: str | None
) -> ErasureReport:
    """As the migrator: every table's rows of the tenant, its graph schema, its keys."""
    with elephant.db.admin_connection() as conn, conn.transaction():
        # Row-level security may apply to the migrator (external mode, FORCE): scope it.
        conn.execute("SELECT set_config(%s, %s, true)", (TENANT_SETTING, tenant))
        with conn.transaction(force_rollback=request.dry_run):
            removed, graph = _drop_tenant(conn, tenant)
        report = ErasureReport(TenantTarget(tenant=tenant), request.dry_run, removed, graph)
        _audit(conn, tenant, actor, request, report)
    if not request.dry_run:
        elephant.access.forget(tenant)
        elephant.db.forget_tenant(tenant)
        for backend in present(elephant.db.capabilities):
            elephant.graph_store(backend).forget(tenant)
    return report


def _tenant_tables(conn: Connection) -> list[str]:
    """Every table with a tenant_id column in the schema of `tenants` (future ones too)."""
    rows = conn.execute(
        "SELECT c.relname FROM pg_catalog.pg_attribute AS a "
        "JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid "
        "WHERE c.relnamespace = (SELECT relnamespace FROM pg_catalog.pg_class "
        "                        WHERE oid = 'tenants'::regclass) "
        "AND c.relkind IN ('r', 'p') AND a.attname = 'tenant_id' AND NOT a.attisdropped "
        "ORDER BY c.relname"
    ).fetchall()
    return [str(row[0]) for row in rows if row[0] not in KEPT_TABLES and row[0] != "api_keys"]


def count_tenant_rows(conn: Connection, table: str, tenant: str) -> int:
    """Rows of ``tenant`` in ``table`` (a table with tenant_id): erasure and export count."""
    row = conn.execute(
        sql.SQL("SELECT count(*) FROM {} WHERE tenant_id = %s").format(sql.Identifier(table)),
        (tenant,),
    ).fetchone()
    return int(row[0]) if row else 0


def _graph_size(conn: Connection, tenant: str) -> tuple[bool, int, int]:
    """(graph exists, vertices, edges) of the tenant's AGE graph."""
    graph = graph_name(tenant)
    # Two statements: without AGE (the managed mode) a statement naming ag_catalog.ag_graph
    # fails when parsed, whatever a to_regclass test beside it says.
    catalog = conn.execute("SELECT to_regclass('ag_catalog.ag_graph') IS NOT NULL").fetchone()
    if not catalog or not catalog[0]:
        return False, 0, 0
    exists = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM ag_catalog.ag_graph WHERE name::text = %s)", (graph,)
    ).fetchone()
    if not exists or not exists[0]:
        return False, 0, 0
    sizes = []
    for table in ("_ag_label_vertex", "_ag_label_edge"):
        row = conn.execute(
            sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(graph, table))
        ).fetchone()
        sizes.append(int(row[0]) if row else 0)
    return True, sizes[0], sizes[1]


def _drop_tenant(conn: Connection, tenant: str) -> tuple[dict[str, int], GraphRemoval]:
    """Count, then delete the tenant row: foreign keys cascade to every table (the
    relational graph's too) and a trigger drops the AGE graph schema. Then check nothing
    is left, else roll everything back. Graph rows are reported as vertices and edges."""
    conn.execute("SELECT 1 FROM tenants WHERE id = %s FOR UPDATE", (tenant,))
    tables = _tenant_tables(conn)
    removed = {table: count_tenant_rows(conn, table, tenant) for table in tables}
    had_graph, vertices, edges = _graph_size(conn, tenant)
    vertices += removed.pop(RELATIONAL_GRAPH_TABLES[0], 0)
    edges += removed.pop(RELATIONAL_GRAPH_TABLES[1], 0)
    removed["api_keys"] = keys.delete_tenant_keys(conn, tenant)
    removed["tenants"] = conn.execute("DELETE FROM tenants WHERE id = %s", (tenant,)).rowcount
    left = [table for table in tables if count_tenant_rows(conn, table, tenant)]
    if left:
        raise ElephantError(
            f"erasure of tenant {tenant} stopped, nothing was removed: rows would remain in "
            f"{', '.join(left)} (a table without ON DELETE CASCADE to tenants)"
        )
    dropped = had_graph and not _graph_size(conn, tenant)[0]
    graph = GraphRemoval(vertices=vertices, edges=edges, schema_dropped=dropped)
    return {table: removed[table] for table in sorted(removed)}, graph
