"""A LangGraph agent whose long-term memory is Elephant (ElephantStore, a BaseStore).

    .venv/bin/python examples/langgraph_agent.py

A graph of three nodes: recall (search the store for what is known about the user),
respond (the model answers with those memories in its prompt), remember (LangMem's
memory tool writes what the user told about themself: a new memory, or an update of
the one it corrects). Four conversations, each on a NEW thread (nothing carried over in
the graph's state): what the user said in the first is recalled in the second; a move
in the third updates the memory, and Elephant keeps the old version as history; the
fourth recalls only the new city.

Offline by default: a scripted model answers from the memories in its prompt; no key,
no network. With ANTHROPIC_API_KEY set, Claude answers (``ANTHROPIC_MODEL``, default
claude-haiku-4-5, through langchain-anthropic). Deciding what to remember stays the
scripted rule in both modes, so the checks do not depend on a model's wording.
Ends with checks; exits 1 when one fails.
"""

from __future__ import annotations

import os
import sys
import uuid
from typing import Any, TypedDict

from _server import elephant_server
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from langmem import create_manage_memory_tool

from elephant_client import Elephant
from elephant_client.langgraph import ElephantStore

CLAUDE = os.environ.get("ANTHROPIC_MODEL", "claude-haiku-4-5")
USER = "ana"


class Turn(TypedDict, total=False):
    user: str
    message: str
    memories: list[dict[str, str]]  # {"id", "content"}
    reply: str


def namespace(user: str) -> tuple[str, ...]:
    return ("memories", user)


def scripted_model(message: str, memories: list[dict[str, str]]) -> str:
    """Answers from the memories it was given, as a model with them in its prompt would."""
    known = "; ".join(m["content"] for m in memories)
    if message.endswith("?"):
        return (
            f"From what you told me before ({known}): here is my answer."
            if known
            else ("I don't know that yet.")
        )
    return "Thanks, I'll remember that."


def claude_model() -> Any:
    from langchain_anthropic import ChatAnthropic

    chat = ChatAnthropic(model=CLAUDE, max_tokens=300)

    def answer(message: str, memories: list[dict[str, str]]) -> str:
        known = "\n".join(f"- {m['content']}" for m in memories) or "(nothing yet)"
        system = f"You are a helpful assistant. What you remember about the user:\n{known}"
        return str(chat.invoke([("system", system), ("human", message)]).content)

    return answer


def build_graph(store: BaseStore, model: Any) -> Any:
    def recall(state: Turn, *, store: BaseStore) -> dict[str, Any]:
        hits = store.search(namespace(state["user"]), query=state["message"], limit=3)
        return {"memories": [{"id": h.key, "content": h.value["content"]} for h in hits]}

    def respond(state: Turn) -> dict[str, Any]:
        return {"reply": model(state["message"], state.get("memories", []))}

    def remember(state: Turn, *, store: BaseStore) -> dict[str, Any]:
        """The scripted rule: a statement about oneself is kept; one that corrects a
        remembered fact (a move) updates that memory instead of adding a second."""
        message = state["message"]
        if message.endswith("?"):
            return {}
        manage = create_manage_memory_tool(namespace=namespace(state["user"]), store=store)
        for sentence in [s.strip() + "." for s in message.split(".") if s.strip()]:
            if not sentence.startswith("I "):
                continue
            corrected = [m for m in state.get("memories", []) if "live" in m["content"]]
            if "moved" in sentence and corrected:
                manage.invoke({"action": "update", "id": corrected[0]["id"], "content": sentence})
            else:
                manage.invoke({"action": "create", "content": sentence})
        return {}

    builder = StateGraph(Turn)
    builder.add_node("recall", recall)
    builder.add_node("respond", respond)
    builder.add_node("remember", remember)
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "respond")
    builder.add_edge("respond", "remember")
    builder.add_edge("remember", END)
    return builder.compile(checkpointer=InMemorySaver(), store=store)


def main() -> int:
    real = bool(os.environ.get("ANTHROPIC_API_KEY"))
    model = claude_model() if real else scripted_model
    print(f"model: {'Claude ' + CLAUDE if real else 'scripted (offline)'}")
    with elephant_server() as server, Elephant(server.url, api_key=server.api_key) as client:
        user = f"{USER}-{uuid.uuid4().hex[:6]}"  # a run of its own on a shared server
        store = ElephantStore(client, wait=True)
        graph = build_graph(store, model)
        replies = []
        for thread, message in enumerate(
            [
                "I live in Porto. I am vegetarian.",
                "Can you suggest where I could have dinner tonight?",
                "I moved to Lisbon last month.",
                "Which city do I live in?",
            ],
            start=1,
        ):
            config = {"configurable": {"thread_id": f"{user}-thread-{thread}"}}
            out = graph.invoke({"user": user, "message": message}, config)
            recalled = [m["content"] for m in out.get("memories", [])]
            print(f"\n[thread {thread}] user: {message}")
            print(f"  recalled: {recalled}")
            print(f"  agent: {out['reply']}")
            replies.append((out["reply"], recalled))

        memories = store.search(namespace(user))
        home = [m for m in memories if "Lisbon" in m.value["content"]]
        history = store.history(namespace(user), home[0].key) if home else []
        print("\nwhere the user lives, and its history in Elephant:")
        for version in history:
            print(f"  {version.updated_at:%Y-%m-%d %H:%M:%S}  {version.value['content']}")
        checks = [
            ("thread 2 recalled what thread 1 was told", "vegetarian" in " ".join(replies[1][1])),
            ("the move updated a memory instead of adding one", len(memories) == 2),
            (
                "the old city is kept as history",
                [v.value["content"] for v in history][:1] == ["I live in Porto."],
            ),
            ("thread 4 recalled Lisbon", any("Lisbon" in m for m in replies[3][1])),
            ("thread 4 still knows the diet", any("vegetarian" in m for m in replies[3][1])),
            ("thread 4 did not recall Porto", not any("Porto" in m for m in replies[3][1])),
            (
                "Elephant's own search finds the memory",
                any(
                    "Lisbon" in hit.text
                    for hit in client.search("where does the user live").results
                ),
            ),
        ]
        if not real:
            checks.append(("the reply used the memory", "vegetarian" in replies[1][0]))
    print()
    for name, passed in checks:
        print(f"{'ok  ' if passed else 'FAIL'} {name}")
    failed = [name for name, passed in checks if not passed]
    print("all checks passed" if not failed else f"{len(failed)} check(s) failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
