"""A key-value store of agent memories over notes: put, get, delete, search, list.

Each put writes a new version of the item as a note (so search, facts, the graph and
erasure treat it like any memory) and supersedes the version before it: that note
stays as history (``history``), search skips it, and the facts extracted from it are
closed in time, as a contradiction closes a fact. A delete supersedes the current
version with no successor. One writer at a time per item (an advisory lock), one
transaction per change: a failed put leaves the previous version current.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import msgspec

from app.db.resources import load_sql, load_statement
from app.db.runtime import Connection
from app.errors import NotFound
from app.services.common.text import content_hash
from app.services.jobs.runner import run_job_now
from app.services.memory import passages
from app.services.memory.commit import check_length, embed_or_none, follow_up_note
from app.services.retrieval.schemas import SearchFilters, SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant
from app.services.store.schemas import (
    Deleted,
    ItemHistory,
    ItemIn,
    ItemList,
    ItemRef,
    ItemSearchIn,
    NamespaceList,
    NamespacesIn,
    PutResult,
    StoreItem,
)

SEARCH_POOL = 200  # hits read to fill a page of items (several hits may be one item)


def joined(namespace: list[str]) -> str:
    """The namespace as memories.item_namespace holds it; labels hold no '.'."""
    return ".".join(namespace)


def item_text(value: Any) -> str:
    """What is indexed when the caller names nothing: the value's strings, one a line
    (keys and structure are not what a question matches); its JSON if it has none."""
    strings = [text.strip() for text in _strings(value) if text.strip()]
    return "\n".join(strings) if strings else json.dumps(value, sort_keys=True)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for inner in value.values():
            yield from _strings(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _strings(inner)


def _item(row: tuple[Any, ...], *, history: bool = False, score: float | None = None) -> StoreItem:
    namespace, key, value, first_put, put_at, memory_id, superseded_at, superseded_by = row
    item = StoreItem(
        namespace=namespace.split("."),
        key=key,
        value=value,
        created_at=first_put,
        updated_at=put_at,
        memory_id=str(memory_id),
    )
    if history:
        by = None if superseded_by is None else str(superseded_by)
        return _replace(item, superseded_at=superseded_at, superseded_by=by)
    if score is not None:
        return _replace(item, score=round(score, 6))
    return item


def _replace(item: StoreItem, **changes: Any) -> StoreItem:
    return msgspec.structs.replace(item, **changes)


def _params(tenant: str, namespace: list[str], key: str) -> dict[str, Any]:
    return {"tenant": tenant, "namespace": joined(namespace), "key": key}


def _current(conn: Connection, where: dict[str, Any]) -> tuple[Any, ...] | None:
    return conn.execute(load_statement("store/current_item.sql"), where).fetchone()


def _supersede(conn: Connection, tenant: str, memory_id: str) -> None:
    """The version stops being current, and so do its facts, those of an extraction
    still running too (it finishes first, or writes nothing: app/services/jobs/sources.py)."""
    conn.execute(load_sql("store/lock_version.sql"), {"tenant": tenant, "memory": memory_id})
    conn.execute(load_sql("store/supersede_item.sql"), {"tenant": tenant, "memory": memory_id})
    conn.execute(
        load_sql("store/supersede_item_facts.sql"), {"tenant": tenant, "memory": memory_id}
    )


def put_item(elephant: Elephant, tenant: str, item: ItemIn, *, wait: bool = False) -> PutResult:
    """Write a new version of the item; the one before it becomes history."""
    text = item.text or item_text(item.value)
    check_length(elephant, text, "text")
    parts = passages.note_passages(text, elephant.settings.embedding.passage_words)
    vectors = embed_or_none(elephant, [text] + [p.text for p in parts])
    where = _params(tenant, item.namespace, item.key)
    with elephant.db.tenant(tenant) as conn:
        conn.execute(load_sql("store/lock_item.sql"), where)
        previous = _current(conn, where)
        replaced = None if previous is None else str(previous[5])
        if replaced is not None:
            _supersede(conn, tenant, replaced)
        row = conn.execute(
            load_sql("store/insert_item.sql"),
            {
                **where,
                "text": text,
                "embedding": None if vectors is None else vectors[0],
                "source": item.source,
                # unique per version: the same value may be put again, under any key
                "digest": content_hash(f"store item {uuid.uuid4()}"),
                "metadata": json.dumps({}),
                "value": json.dumps(item.value),
                "created": None if previous is None else previous[3],
            },
        ).fetchone()
        assert row is not None
        memory_id, first_put, put_at = str(row[0]), row[1], row[2]
        if replaced is not None:
            conn.execute(
                load_sql("store/link_successor.sql"),
                {"tenant": tenant, "older": replaced, "newer": memory_id},
            )
        job_id = follow_up_note(elephant, conn, tenant, memory_id, item.subject, vectors, parts)
    facts = run_job_now(elephant, tenant, job_id)[0] if wait else None
    stored = StoreItem(
        namespace=list(item.namespace),
        key=item.key,
        value=item.value,
        created_at=first_put,
        updated_at=put_at,
        memory_id=memory_id,
    )
    return PutResult(item=stored, replaced=replaced, job_id=job_id, facts=facts)


def get_item(elephant: Elephant, tenant: str, ref: ItemRef) -> StoreItem:
    with elephant.db.tenant(tenant) as conn:
        row = _current(conn, _params(tenant, ref.namespace, ref.key))
    if row is None:
        raise NotFound(f"no item {ref.key!r} in namespace {ref.namespace!r}")
    return _item(row)


def delete_item(elephant: Elephant, tenant: str, ref: ItemRef) -> Deleted:
    """The current version becomes history with no successor; its facts close."""
    where = _params(tenant, ref.namespace, ref.key)
    with elephant.db.tenant(tenant) as conn:
        conn.execute(load_sql("store/lock_item.sql"), where)
        row = _current(conn, where)
        if row is None:
            return Deleted(deleted=False, memory_id=None)
        _supersede(conn, tenant, str(row[5]))
    return Deleted(deleted=True, memory_id=str(row[5]))


def item_history(elephant: Elephant, tenant: str, ref: ItemRef) -> ItemHistory:
    with elephant.db.tenant(tenant) as conn:
        rows = conn.execute(
            load_statement("store/item_versions.sql"), _params(tenant, ref.namespace, ref.key)
        ).fetchall()
    if not rows:
        raise NotFound(f"no item {ref.key!r} was ever put in namespace {ref.namespace!r}")
    versions = [_item(row, history=True) for row in rows]
    return ItemHistory(namespace=list(ref.namespace), key=ref.key, versions=versions)


def search_items(elephant: Elephant, tenant: str, request: ItemSearchIn) -> ItemList:
    """Without a query: the newest items first. With one: Elephant's hybrid search over
    the items (their notes and their facts), each item once, at its best hit."""
    value = None if request.filter is None else json.dumps(request.filter)
    if request.query is None:
        with elephant.db.tenant(tenant) as conn:
            rows = conn.execute(
                load_statement("store/list_items.sql"),
                {
                    "tenant": tenant,
                    "prefix": joined(request.namespace_prefix),
                    "item_value": value,
                    "limit": request.limit,
                    "offset": request.offset,
                },
            ).fetchall()
        return ItemList(items=[_item(row) for row in rows])
    found = search(
        elephant,
        tenant,
        SearchRequest(
            query=request.query,
            limit=SEARCH_POOL,
            filters=SearchFilters(
                item_namespace=request.namespace_prefix, item_value=request.filter
            ),
            diversify=False,  # turns: windows have them, items do not
        ),
    )
    best: dict[str, float] = {}
    for hit in found.hits:
        memory_id = hit.memory_id if hit.kind == "fact" else hit.id
        if memory_id is not None and memory_id not in best:
            best[memory_id] = hit.score
    wanted = list(best)[request.offset : request.offset + request.limit]
    if not wanted:
        return ItemList(items=[])
    with elephant.db.tenant(tenant) as conn:
        rows = conn.execute(
            load_statement("store/items_by_id.sql"), {"tenant": tenant, "ids": wanted}
        ).fetchall()
    by_id = {str(row[5]): row for row in rows}
    items = [_item(by_id[m], score=best[m]) for m in wanted if m in by_id]
    return ItemList(items=items)


def list_namespaces(elephant: Elephant, tenant: str, request: NamespacesIn) -> NamespaceList:
    """The namespaces holding a current item, matched label by label ("*" any label),
    cut to ``max_depth`` (then each once), in order."""
    literal = []
    for label in request.prefix:
        if label == "*":
            break
        literal.append(label)
    with elephant.db.tenant(tenant) as conn:
        rows = conn.execute(
            load_sql("store/namespaces.sql"), {"tenant": tenant, "prefix": joined(literal)}
        ).fetchall()
    chosen: list[list[str]] = []
    for (text,) in rows:
        labels = text.split(".")
        if not (_matches(labels, request.prefix) and _matches(labels[::-1], request.suffix[::-1])):
            continue
        cut = labels[: request.max_depth] if request.max_depth else labels
        if cut not in chosen:
            chosen.append(cut)
    return NamespaceList(namespaces=chosen[request.offset : request.offset + request.limit])


def _matches(labels: list[str], pattern: list[str]) -> bool:
    if len(pattern) > len(labels):
        return False
    return all(p in ("*", label) for label, p in zip(labels, pattern, strict=False))
