"""``ElephantStore`` (client/elephant_client/langgraph.py), a LangGraph BaseStore, against
the real API served by uvicorn on 127.0.0.1: the same operations give the same answers
as LangGraph's own InMemoryStore (the reference implementation of BaseStore), a
compiled graph remembers across threads through it, LangMem's memory tools run on it,
and a put on an existing key keeps the old version as history."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.store.base import BaseStore, GetOp, Item, SearchOp
from langgraph.store.memory import InMemoryStore
from langmem import create_manage_memory_tool, create_search_memory_tool

from app.api import create_app
from app.config import Settings
from app.db import Database
from app.providers.embedder import Embedder
from app.services.runtime import Elephant as Runtime
from elephant_client import AsyncElephant, Elephant
from elephant_client.langgraph import ElephantStore
from tests.conftest import operator_key, serve_in_thread


@pytest.fixture(scope="module")
def url(settings: Settings, db: Database, embedder: Embedder) -> Iterator[str]:
    runtime = Runtime(settings=settings, db=db, embedder=embedder, llm=None)
    try:
        with serve_in_thread(create_app(settings, runtime, bind="127.0.0.1")) as base:
            yield base
    finally:
        runtime.close_providers()


@pytest.fixture(scope="module")
def key(db: Database) -> str:
    return operator_key(db)


def store_for(url: str, key: str, tenant: str, **options: Any) -> ElephantStore:
    return ElephantStore(Elephant(url, api_key=key, tenant=tenant), **options)


def fresh_tenant() -> str:
    return f"lg_{uuid.uuid4().hex[:10]}"


def shape(result: Any) -> Any:
    """An answer without what two stores cannot share: timestamps and scores."""
    if isinstance(result, Item):
        return (result.namespace, result.key, result.value)
    if isinstance(result, list):
        return [shape(r) for r in result]
    return result


def script(store: BaseStore) -> list[Any]:
    """The BaseStore surface a graph uses, in one sequence: each answer recorded."""
    seen: list[Any] = []
    store.put(("users", "u1", "prefs"), "food", {"likes": "ramen", "level": 3})
    store.put(("users", "u1", "prefs"), "drink", {"likes": "green tea", "level": 1})
    store.put(("users", "u2", "prefs"), "food", {"likes": "pizza", "level": 2})
    store.put(("users", "u2", "notes"), "n1", {"text": "allergic to peanuts", "level": 5})
    seen.append(store.get(("users", "u1", "prefs"), "food"))
    seen.append(store.get(("users", "u1", "prefs"), "missing"))
    store.put(("users", "u1", "prefs"), "food", {"likes": "udon", "level": 4})
    seen.append(store.get(("users", "u1", "prefs"), "food"))
    store.delete(("users", "u1", "prefs"), "drink")
    seen.append(store.get(("users", "u1", "prefs"), "drink"))
    # search without a query: filters, namespaces and paging (order: newest first in
    # both stores for these, compared as sets where the reference does not define one)
    seen.append(sorted(shape(store.search(("users",), filter={"level": 2}))))
    seen.append(sorted(shape(store.search(("users", "u1")))))
    seen.append(sorted(shape(store.search(("users",), filter={"level": {"$gte": 4}}))))
    seen.append(sorted(shape(store.search(("users",), filter={"likes": {"$ne": "pizza"}}))))
    seen.append(len(store.search(("users",), limit=2)))
    seen.append(len(store.search(("users",), limit=2, offset=2)))
    seen.append(store.search(("nobody",)))
    seen.append(store.list_namespaces())
    seen.append(store.list_namespaces(prefix=("users", "u2")))
    seen.append(store.list_namespaces(suffix=("prefs",)))
    seen.append(store.list_namespaces(prefix=("users", "*", "prefs")))
    seen.append(store.list_namespaces(max_depth=2))
    seen.append(store.list_namespaces(limit=1, offset=1))
    return [shape(answer) for answer in seen]


def test_the_same_answers_as_langgraphs_reference_store(url: str, key: str) -> None:
    expected = script(InMemoryStore())
    assert script(store_for(url, key, fresh_tenant())) == expected


def test_the_async_side_and_batches(url: str, key: str) -> None:
    tenant = fresh_tenant()

    async def run() -> list[Any]:
        async with AsyncElephant(url, api_key=key, tenant=tenant) as client:
            store = ElephantStore(aclient=client)
            await store.aput(("a",), "k1", {"text": "the blue key opens the shed"})
            await store.aput(("a",), "k2", {"text": "the red key opens the garage"})
            return await store.abatch(
                [
                    GetOp(("a",), "k1"),
                    GetOp(("a",), "nope"),
                    SearchOp(("a",), query="which key opens the garage", limit=1),
                ]
            )

    got, missing, found = asyncio.run(run())
    assert got is not None and got.value == {"text": "the blue key opens the shed"}
    assert missing is None
    assert [item.key for item in found] == ["k2"]
    assert found[0].score is not None


def test_a_put_on_an_existing_key_keeps_history_and_search_sees_the_current(
    url: str, key: str
) -> None:
    store = store_for(url, key, fresh_tenant(), wait=True)
    ns = ("memories", "sam")
    store.put(ns, "home", {"content": "Sam lives in Porto"})
    first = store.get(ns, "home")
    store.put(ns, "home", {"content": "Sam moved to Berlin"})
    current = store.get(ns, "home")
    assert current is not None and first is not None
    assert current.value == {"content": "Sam moved to Berlin"}
    assert current.created_at == first.created_at < current.updated_at
    versions = store.history(ns, "home")
    assert [v.value["content"] for v in versions] == ["Sam lives in Porto", "Sam moved to Berlin"]
    hits = store.search(ns, query="where does Sam live")
    assert [h.value["content"] for h in hits] == ["Sam moved to Berlin"]
    # the item is a memory: Elephant's own search finds the current version only
    client = store.client
    assert client is not None
    texts = [hit.text for hit in client.search("Sam lives").results]
    assert "Sam moved to Berlin" in texts and "Sam lives in Porto" not in texts
    old_facts = [f for f in client.iter_facts(status="superseded") if "Porto" in f.text]
    assert old_facts and all(f.valid_to is not None for f in old_facts)


def test_index_fields_choose_what_is_searched(url: str, key: str) -> None:
    store = store_for(url, key, fresh_tenant(), index={"fields": ["summary"]})
    store.put(("docs",), "d1", {"summary": "quarterly revenue report", "body": "zebra migration"})
    store.put(("docs",), "d2", {"summary": "zebra migration study", "body": "revenue"})
    assert [h.key for h in store.search(("docs",), query="zebra migration", limit=1)] == ["d2"]
    # a put's own index overrides the store's
    store.put(
        ("docs",), "d3", {"summary": "nothing here", "body": "okapi sighting"}, index=["body"]
    )
    assert [h.key for h in store.search(("docs",), query="okapi sighting", limit=1)] == ["d3"]


class Chat(TypedDict):
    user: str
    said: str
    answer: str


def test_a_compiled_graph_remembers_across_threads(url: str, key: str) -> None:
    """Thread 1 stores what the user said; thread 2 (no shared state, a new checkpoint
    thread) answers from the store."""

    def remember_or_recall(state: Chat, *, store: BaseStore) -> dict[str, Any]:
        ns = ("memories", state["user"])
        if state["said"].startswith("remember:"):
            fact = state["said"].removeprefix("remember:").strip()
            store.put(ns, str(uuid.uuid4()), {"content": fact})
            return {"answer": "noted"}
        hits = store.search(ns, query=state["said"], limit=1)
        return {"answer": hits[0].value["content"] if hits else "I don't know"}

    builder = StateGraph(Chat)
    builder.add_node("memory", remember_or_recall)
    builder.add_edge(START, "memory")
    store = store_for(url, key, fresh_tenant())
    graph = builder.compile(checkpointer=InMemorySaver(), store=store)
    say = {"user": "kim", "answer": ""}
    first = graph.invoke(
        {**say, "said": "remember: my locker code is 7712"},
        {"configurable": {"thread_id": "t1"}},
    )
    graph.invoke(
        {**say, "said": "remember: my manager is Priya"}, {"configurable": {"thread_id": "t1"}}
    )
    second = graph.invoke(
        {**say, "said": "what is my locker code?"}, {"configurable": {"thread_id": "t2"}}
    )
    assert first["answer"] == "noted"
    assert second["answer"] == "my locker code is 7712"
    other_user = graph.invoke(
        {"user": "lee", "answer": "", "said": "what is my locker code?"},
        {"configurable": {"thread_id": "t3"}},
    )
    assert other_user["answer"] == "I don't know"


def test_langmem_memory_tools_run_on_it(url: str, key: str) -> None:
    store = store_for(url, key, fresh_tenant())
    ns = ("memories", "dana")
    manage = create_manage_memory_tool(namespace=ns, store=store)
    search = create_search_memory_tool(namespace=ns, store=store)
    created = manage.invoke({"content": "Dana prefers aisle seats", "action": "create"})
    manage.invoke({"content": "Dana's dog is called Biscuit", "action": "create"})
    memory_id = str(created).split()[-1]
    found = search.invoke({"query": "seat preference"})
    assert "aisle" in str(found)
    manage.invoke({"content": "Dana prefers window seats", "action": "update", "id": memory_id})
    found = search.invoke({"query": "seat preference"})
    assert "window seats" in str(found) and "aisle" not in str(found)
    assert [v.value["content"] for v in store.history(ns, memory_id)] == [
        "Dana prefers aisle seats",
        "Dana prefers window seats",
    ]
    manage.invoke({"action": "delete", "id": memory_id})
    assert store.get(ns, memory_id) is None
    assert "Biscuit" in str(search.invoke({"query": "dog"}))
