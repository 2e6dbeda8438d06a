"""``ElephantStore``: a LangGraph ``BaseStore`` over Elephant's REST API (the extra
``elephant-client[langgraph]``).

    from elephant_client import Elephant
    from elephant_client.langgraph import ElephantStore

    store = ElephantStore(Elephant())  # ELEPHANT_URL, ELEPHANT_API_KEY
    graph = builder.compile(store=store)

The tenant is the client's (its key's, or the one an all-tenant key names); a
namespace and a key name an item inside it. What Elephant adds to a store: a put on an
existing key is a new version and the one before it stays as history
(``history()``), leaving search, its facts closed in time; ``search(query=...)`` is
Elephant's hybrid search (dense, BM25 and the item's extracted facts, fused), and every
item is also found by Elephant's own search, MCP tools and reflect.

``IndexConfig``: ``fields`` choose what of a value is indexed (LangGraph's paths:
``"content"``, ``"a.b"``, ``"items[*].text"``; ``["$"]``, the default, is every string
of the value). ``embed`` and ``dims`` are not used: the server embeds with its own
model. ``index=False`` on a put still indexes the item (every item is a memory). TTLs
are not supported (``supports_ttl`` is False).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from elephant_client._async import AsyncElephant
from elephant_client._errors import NotFound
from elephant_client._models import ItemHistory, StoreItem
from elephant_client._sync import Elephant

__all__ = ["ElephantStore"]

MAX_FETCH = 200  # items the server returns at most per search
_COMPARISONS = {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"}


class ElephantStore(BaseStore):
    """A LangGraph store whose items are Elephant memories (see the module docstring).

    ``client`` serves the sync methods, ``aclient`` the async ones; with only one, the
    other side runs it in a thread (sync over async is not possible inside a running
    event loop, so give ``client`` for sync use). ``wait``: each put returns once the
    server has extracted the item's facts (slower; tests and scripts that read facts
    right away), otherwise the server's worker extracts them.
    """

    supports_ttl: bool = False

    def __init__(
        self,
        client: Elephant | None = None,
        *,
        aclient: AsyncElephant | None = None,
        index: IndexConfig | None = None,
        source: str = "langgraph",
        wait: bool = False,
    ) -> None:
        if client is None and aclient is None:
            client = Elephant()
        self.client = client
        self.aclient = aclient
        self.index_config = index
        self.source = source
        self.wait = wait

    # ------------------------------------------------------------ BaseStore

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        if self.client is None:
            raise RuntimeError("ElephantStore was given only an async client: use the a* methods")
        return [self._run(self.client, op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        if self.aclient is None:
            return await asyncio.to_thread(self.batch, list(ops))
        return [await self._arun(self.aclient, op) for op in ops]

    # ------------------------------------------------------------ Elephant's own

    def history(self, namespace: tuple[str, ...], key: str) -> list[Item]:
        """Every version of the item, oldest first (deleted or replaced ones included)."""
        if self.client is None:
            raise RuntimeError("history needs the sync client: use ahistory")
        return _versions(self.client.store_history(namespace, key))

    async def ahistory(self, namespace: tuple[str, ...], key: str) -> list[Item]:
        if self.aclient is None:
            return await asyncio.to_thread(self.history, namespace, key)
        return _versions(await self.aclient.store_history(namespace, key))

    # ------------------------------------------------------------ one operation

    def _run(self, client: Elephant, op: Op) -> Result:
        if isinstance(op, GetOp):
            try:
                return _item(client.store_get(op.namespace, op.key))
            except NotFound:
                return None
        if isinstance(op, PutOp):
            if op.value is None:
                client.store_delete(op.namespace, op.key)
            else:
                text = self._text(op)
                client.store_put(
                    op.namespace, op.key, op.value, text=text, source=self.source, wait=self.wait
                )
            return None
        if isinstance(op, SearchOp):
            request, compare = _search_request(op)
            found = client.store_search(op.namespace_prefix, **request)
            return _page(found, op, compare)
        if isinstance(op, ListNamespacesOp):
            return [tuple(n) for n in client.store_namespaces(**_namespaces_request(op))]
        raise ValueError(f"unknown store operation: {op!r}")

    async def _arun(self, client: AsyncElephant, op: Op) -> Result:
        if isinstance(op, GetOp):
            try:
                return _item(await client.store_get(op.namespace, op.key))
            except NotFound:
                return None
        if isinstance(op, PutOp):
            if op.value is None:
                await client.store_delete(op.namespace, op.key)
            else:
                text = self._text(op)
                await client.store_put(
                    op.namespace, op.key, op.value, text=text, source=self.source, wait=self.wait
                )
            return None
        if isinstance(op, SearchOp):
            request, compare = _search_request(op)
            found = await client.store_search(op.namespace_prefix, **request)
            return _page(found, op, compare)
        if isinstance(op, ListNamespacesOp):
            return [tuple(n) for n in await client.store_namespaces(**_namespaces_request(op))]
        raise ValueError(f"unknown store operation: {op!r}")

    def _text(self, op: PutOp) -> str | None:
        """What the server indexes: the op's fields, else the store's; None (the
        server's default, every string of the value) for ``$``, False or nothing."""
        fields: Sequence[str] | None = None
        if isinstance(op.index, list):
            fields = op.index
        elif op.index is None and self.index_config is not None:
            fields = self.index_config.get("fields")
        if not fields or list(fields) == ["$"]:
            return None
        texts: list[str] = []
        for field in fields:
            texts.extend(get_text_at_path(op.value, tokenize_path(field)))
        text = "\n".join(t for t in texts if t.strip())
        return text or None


# ------------------------------------------------------------------ mapping


def _item(found: StoreItem) -> Item:
    return Item(
        value=found.value,
        key=found.key,
        namespace=tuple(found.namespace),
        created_at=found.created_at,
        updated_at=found.updated_at,
    )


def _versions(history: ItemHistory) -> list[Item]:
    return [_item(version) for version in history.versions]


def _search_request(op: SearchOp) -> tuple[dict[str, Any], dict[str, Any]]:
    """The request the server answers, and the comparisons left to apply here: equality
    goes to the server (JSON containment), $ne/$gt/$gte/$lt/$lte are checked on the page
    read (up to 200 items)."""
    equal: dict[str, Any] = {}
    compare: dict[str, Any] = {}
    for field, wanted in (op.filter or {}).items():
        if isinstance(wanted, Mapping) and wanted and set(wanted) <= _COMPARISONS:
            if set(wanted) == {"$eq"}:
                equal[field] = wanted["$eq"]
            else:
                compare[field] = wanted
        else:
            equal[field] = wanted
    request: dict[str, Any] = {"query": op.query, "filter": equal or None}
    if compare:
        request.update(limit=MAX_FETCH, offset=0)
    else:
        request.update(limit=min(op.limit, MAX_FETCH), offset=op.offset)
    return request, compare


def _page(found: list[StoreItem], op: SearchOp, compare: dict[str, Any]) -> list[SearchItem]:
    chosen = [item for item in found if _satisfies(item.value, compare)]
    if compare:
        chosen = chosen[op.offset : op.offset + op.limit]
    return [
        SearchItem(
            namespace=tuple(item.namespace),
            key=item.key,
            value=item.value,
            created_at=item.created_at,
            updated_at=item.updated_at,
            score=item.score,
        )
        for item in chosen
    ]


def _satisfies(value: dict[str, Any], compare: dict[str, Any]) -> bool:
    for field, conditions in compare.items():
        actual = value.get(field)
        for operator, wanted in conditions.items():
            if not _holds(operator, actual, wanted):
                return False
    return True


def _holds(operator: str, actual: Any, wanted: Any) -> bool:
    if operator == "$eq":
        return bool(actual == wanted)
    if operator == "$ne":
        return bool(actual != wanted)
    try:
        if operator == "$gt":
            return bool(actual > wanted)
        if operator == "$gte":
            return bool(actual >= wanted)
        if operator == "$lt":
            return bool(actual < wanted)
        return bool(actual <= wanted)
    except TypeError:  # not comparable (a missing field, a string against a number)
        return False


def _namespaces_request(op: ListNamespacesOp) -> dict[str, Any]:
    request: dict[str, Any] = {"max_depth": op.max_depth, "limit": op.limit, "offset": op.offset}
    for condition in op.match_conditions or ():
        side: Literal["prefix", "suffix"] = condition.match_type
        request[side] = list(condition.path)
    return request
