"""The MCP adapter: profiles, annotations, every tool, errors, and three transports
(fastmcp's in-process client, streamable HTTP mounted in the API and served by
uvicorn on 127.0.0.1, and `elephant mcp` on stdio), on the real database and model."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from click.testing import CliRunner
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from fastmcp.exceptions import ToolError

from app.api import create_app
from app.cli import main
from app.config import Settings, load_settings
from app.db import Database
from app.errors import ConfigError
from app.mcp.context import ElephantMCP
from app.mcp.registry import PROFILE_NAMES, PROFILES, Profile
from app.mcp.server import build_server, specs
from app.providers.embedder import Embedder
from app.services.access.auth import check_bind, is_loopback
from app.services.access.keys import KeyIn, create_key, revoke_key
from app.services.runtime import Elephant
from tests.conftest import (
    api_client,
    count_rows,
    make_settings,
    operator_key,
    serve_in_thread,
)

T = TypeVar("T")
ELEPHANT = str(Path(sys.executable).parent / "elephant")
GRAPH_READS = ["search_nodes", "open_nodes", "read_graph"]
GRAPH_WRITES = [
    "record", "record_decision", "revise", "create_entities", "create_relations",
    "add_observations", "invalidate_observations",
]  # fmt: skip
IDEMPOTENT_WRITES = {
    "record", "record_decision", "create_entities", "create_relations", "add_observations",
}  # fmt: skip
DELETES = ["delete_entities", "delete_observations", "delete_relations"]
READS = ["search", "reflect", "stats", "get_handoff", *GRAPH_READS]
WRITES = ["store", "commit_conversation", "feedback", "close_session", *GRAPH_WRITES]
TRANSCRIPT = (
    "Ines: We decided to keep the importer in Rust.\n"
    "Omar: Should the CLI also accept CSV?\n"
    "Ines: Next I will write the parser tests."
)


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def data(result: Any) -> Any:
    return result.structured_content


@pytest.fixture(scope="module")
def server(settings: Settings, elephant: Elephant) -> ElephantMCP:
    return build_server(settings, lambda: elephant)


async def call(server: ElephantMCP, name: str, **arguments: Any) -> Any:
    async with Client(server) as client:
        return data(await client.call_tool(name, arguments))


# ------------------------------------------------------------------ profiles and annotations


def test_profile_membership() -> None:
    names = {profile: [spec.name for spec in specs(profile)] for profile in PROFILE_NAMES}
    assert sorted(names["recall"]) == sorted(READS)
    assert sorted(names["record"]) == sorted(WRITES)
    assert sorted(names["standard"]) == sorted(READS + WRITES)
    assert sorted(names["full"]) == sorted(READS + WRITES + DELETES)
    assert not any(name.startswith("delete") for name in names["standard"])
    for profile in PROFILE_NAMES:
        for spec in specs(profile):
            hints = spec.annotations()
            if profile == "recall":
                assert hints.read_only_hint is True, spec.name
            if profile == "record":
                assert hints.read_only_hint is False, spec.name
            if spec.kind == "delete":  # the graph's delete_* tools: full only, destructive
                assert profile == "full" and hints.destructive_hint is True
    assert PROFILES["standard"] == {"read", "write"} and "delete" in PROFILES["full"]


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_listed_tools_are_the_profile(
    settings: Settings, elephant: Elephant, profile: Profile
) -> None:
    async def listed() -> list[str]:
        async with Client(build_server(settings, lambda: elephant, profile=profile)) as client:
            return [tool.name for tool in await client.list_tools()]

    assert run(listed()) == [spec.name for spec in specs(profile)]


def test_a_tool_outside_the_profile_is_not_callable(settings: Settings, elephant: Elephant) -> None:
    recall = build_server(settings, lambda: elephant, profile="recall")
    with pytest.raises(ToolError, match="Unknown tool: 'store'"):
        run(call(recall, "store", text="Pia's locker code is 4711"))


def test_annotations_per_tool(server: ElephantMCP) -> None:
    async def listed() -> dict[str, dict[str, Any]]:
        async with Client(server) as client:
            return {
                tool.name: tool.annotations.model_dump(by_alias=True, exclude_none=True)
                for tool in await client.list_tools()
                if tool.annotations is not None
            }

    read = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True}
    write = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False}
    expected = {name: read for name in READS} | {
        name: {**write, "idempotentHint": name in IDEMPOTENT_WRITES} for name in WRITES
    }
    annotations = run(listed())
    assert {
        name: {k: v for k, v in hints.items() if k in read} for name, hints in annotations.items()
    } == expected
    assert all(hints["openWorldHint"] is False for hints in annotations.values())


def test_tool_definitions_describe_their_parameters(server: ElephantMCP) -> None:
    async def listed() -> list[Any]:
        async with Client(server) as client:
            return list(await client.list_tools())

    for tool in run(listed()):
        assert tool.description and len(tool.description) < 300, tool.name
        assert tool.output_schema is None
        for name, schema in tool.input_schema.get("properties", {}).items():
            assert schema.get("description"), f"{tool.name}.{name} has no description"


# ------------------------------------------------------------------ happy paths (in-process)


def test_store_search_feedback_stats_reflect(server: ElephantMCP, elephant: Elephant) -> None:
    async def scenario() -> dict[str, Any]:
        async with Client(server) as client:
            stored = data(
                await client.call_tool(
                    "store",
                    {
                        "text": "Pia moved to Graz in March 2024 to work at AVL on engines",
                        "source": "chat",
                        "occurred_at": "2024-03-01",
                    },
                )
            )
            found = data(await client.call_tool("search", {"query": "Where does Pia work?"}))
            helped = data(
                await client.call_tool("feedback", {"id": stored["memory_id"], "helpful": True})
            )
            counts = data(await client.call_tool("stats", {}))
            answer = data(await client.call_tool("reflect", {"query": "Where did Pia move?"}))
            return {
                "stored": stored,
                "found": found,
                "helped": helped,
                "counts": counts,
                "answer": answer,
            }

    out = run(scenario())
    assert out["stored"]["status"] == "stored" and out["stored"]["gate"]["decision"] == "accepted"
    top = out["found"]["results"][0]
    assert top["id"] == out["stored"]["memory_id"]
    assert set(top) == {"id", "kind", "date", "source", "score", "text"}  # no vectors, no ranks
    assert top["date"] == "2024-03-01" and top["source"] == "chat"
    assert out["helped"]["importance"] == 55.0
    assert out["counts"]["tenant"] == "default" and out["counts"]["memories"]["total"] == 1
    assert out["answer"]["answer"] is None and "no LLM" in out["answer"]["note"]
    assert "AVL" in out["answer"]["sources"][0]["text"]
    assert count_rows(elephant.db, "default", "feedback") == 1


def test_search_tool_fills_a_token_budget(server: ElephantMCP) -> None:
    notes = [
        "Noor's bakery in Leeds sells cardamom buns every Saturday morning",
        "Noor hired two bakers for the Leeds bakery in June",
        "The Leeds bakery of Noor won a regional award for its sourdough loaf",
        "Noor plans a second bakery in York, opening next spring if the lease is signed",
    ]
    for text in notes:
        run(call(server, "store", text=text, source="budget"))
    wide = run(call(server, "search", query="Noor's bakery", limit=50))
    tight = run(call(server, "search", query="Noor's bakery", max_tokens=40))
    assert 0 < tight["count"] < wide["count"]
    assert sum(-(-len(hit["text"]) // 4) for hit in tight["results"]) <= 40
    assert run(call(server, "search", query="Noor's bakery"))["count"] <= 10  # the default


def test_commit_conversation_tool(server: ElephantMCP, elephant: Elephant) -> None:
    turns = [
        {"speaker": "Lena", "text": "I adopted a cat named Miso yesterday."},
        {"speaker": "Tom", "text": "Congrats! What breed is Miso?"},
        {"speaker": "Lena", "text": "A Norwegian forest cat, she is two years old."},
    ]
    result = run(
        call(
            server,
            "commit_conversation",
            turns=turns,
            session_date="2024-05-08",
            conversation_id="mcp-c1",
        )
    )
    assert result["turns"] == 3 and result["windows"]["stored"] == 1
    with elephant.db.tenant("default") as conn:
        row = conn.execute(
            "SELECT external_id, source FROM conversations WHERE id = %s",
            (result["conversation_id"],),
        ).fetchone()
    assert row == ("mcp-c1", "mcp")


def test_close_session_then_handoff_tool_and_resource(server: ElephantMCP) -> None:
    async def scenario() -> tuple[Any, Any, str]:
        async with Client(server) as client:
            closed = data(
                await client.call_tool(
                    "close_session", {"project": "importer", "transcript": TRANSCRIPT}
                )
            )
            handoff = data(await client.call_tool("get_handoff", {"project": "importer"}))
            contents = await client.read_resource("elephant://handoff/importer")
            return closed, handoff, contents[0].text

    closed, handoff, resource = run(scenario())
    assert closed["turns"] == 3 and closed["facts"] > 0
    assert handoff == closed["handoff"]
    assert handoff["decisions"] == ["We decided to keep the importer in Rust."]
    assert handoff["open_questions"] == ["Should the CLI also accept CSV?"]
    assert handoff["next_steps"] == ["Next I will write the parser tests."]
    assert '"project": "importer"' in resource and "keep the importer in Rust" in resource


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("tool", "arguments", "fragments"),
    [
        ("store", {"text": ""}, ["invalid_input", "text"]),
        ("store", {}, ["invalid_input", "text", "required"]),
        ("store", {"text": "Pia likes tea", "importance": 101}, ["importance", "100"]),
        ("store", {"text": "Pia likes tea", "occurred_at": "last tuesday-ish"}, ["occurred_at"]),
        ("store", {"text": "x" * 40000}, ["commit.max_text_chars"]),
        ("search", {"query": "tea", "limit": 0}, ["invalid_input", "limit"]),
        ("search", {"query": "tea", "kind": ["memo"]}, ["kind[0]"]),
        ("feedback", {"id": "nope", "helpful": True}, ["invalid_input", "id"]),
        (
            "feedback",
            {"id": "00000000-0000-0000-0000-000000000000", "helpful": True},
            ["not_found", "no memory or fact"],
        ),
        (
            "commit_conversation",
            {"turns": [{"speaker": "A", "text": "hi", "mood": "ok"}]},
            ["turns[0].mood"],
        ),
        ("commit_conversation", {"turns": []}, ["turns"]),
        ("close_session", {"project": "p"}, ["exactly one of transcript"]),
        ("get_handoff", {"project": "never-closed"}, ["not_found", "close a session"]),
    ],
)
def test_bad_input_is_an_mcp_error_naming_the_field(
    server: ElephantMCP, tool: str, arguments: dict[str, Any], fragments: list[str]
) -> None:
    with pytest.raises(ToolError) as excinfo:
        run(call(server, tool, **arguments))
    message = str(excinfo.value)
    for fragment in fragments:
        assert fragment in message, message
    assert "Traceback" not in message


def test_missing_handoff_resource_is_an_error(server: ElephantMCP) -> None:
    async def read() -> Any:
        async with Client(server) as client:
            return await client.read_resource("elephant://handoff/nothing-here")

    with pytest.raises(Exception, match="not_found"):
        run(read())


# ------------------------------------------------------------------ HTTP (uvicorn on 127.0.0.1)


@pytest.fixture(scope="module")
def http_keys(db: Database) -> dict[str, str]:
    """Keys for the HTTP tests: bound to one tenant (read+write, read only) and an operator's."""
    return {
        "writer": create_key(db, KeyIn(tenant="mcp-http", scopes=["read", "write"])).key,
        "reader": create_key(db, KeyIn(tenant="mcp-http", scopes=["read"])).key,
        "operator": operator_key(db, "mcp operator"),
    }


@contextmanager
def served(settings: Settings, db: Database, embedder: Embedder) -> Iterator[str]:
    """The API (/mcp mounted) served by uvicorn in a thread; yields the MCP URL."""
    runtime = Elephant(settings=settings, db=db, embedder=embedder, llm=None)
    with serve_in_thread(create_app(settings, runtime)) as url:
        yield f"{url}/mcp"


@pytest.fixture(scope="module")
def http_url(settings: Settings, db: Database, embedder: Embedder) -> Iterator[str]:
    """auth.mode keys, the default."""
    with served(settings, db, embedder) as url:
        yield url


def test_tool_calls_have_the_keys_rate_limits(
    settings: Settings, db: Database, embedder: Embedder, http_keys: dict[str, str]
) -> None:
    limited = make_settings(
        settings.data_dir,
        embedded={"database": settings.embedded.database},
        auth={"rate_read_per_minute": 2},
    )

    async def scenario(url: str) -> None:
        headers = {"Authorization": f"Bearer {http_keys['reader']}"}
        async with Client(StreamableHttpTransport(url, headers=headers)) as client:
            await client.call_tool("stats", {})
            await client.call_tool("stats", {})
            with pytest.raises(ToolError, match="rate_limited: too many read requests"):
                await client.call_tool("stats", {})

    with served(limited, db, embedder) as url:
        run(scenario(url))


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def test_http_refuses_a_missing_wrong_or_revoked_key(
    http_url: str, db: Database, http_keys: dict[str, str]
) -> None:
    forged = "ek_0123456789ab_" + "x" * 43
    for headers in ({}, {"Authorization": f"Bearer {forged}"}, {"Authorization": "Bearer nope"}):
        response = httpx.post(http_url, json=INIT, headers={**ACCEPT, **headers}, timeout=10)
        assert response.status_code == 401, response.text
        assert "Bearer" in response.headers.get("www-authenticate", "")
    short_lived = create_key(db, KeyIn(tenant="mcp-http", scopes=["read"])).key
    bearer = {**ACCEPT, "Authorization": f"Bearer {short_lived}"}
    assert httpx.post(http_url, json=INIT, headers=bearer, timeout=10).status_code == 200
    revoke_key(db, short_lived, tenant=None)
    assert httpx.post(http_url, json=INIT, headers=bearer, timeout=10).status_code == 401


def test_http_tools_take_the_tenant_from_the_key(
    http_url: str, elephant: Elephant, http_keys: dict[str, str]
) -> None:
    transport = StreamableHttpTransport(
        http_url, headers={"Authorization": f"Bearer {http_keys['writer']}"}
    )

    async def scenario() -> tuple[list[str], Any, Any, Any]:
        async with Client(transport) as client:
            names = [tool.name for tool in await client.list_tools()]
            stored = data(
                await client.call_tool(
                    "store", {"text": "Ravi's train to Porto leaves on 9 May 2025"}
                )
            )
            found = data(await client.call_tool("search", {"query": "When does Ravi travel?"}))
            with pytest.raises(ToolError, match="not_found"):
                await client.call_tool("get_handoff", {"project": "nothing"})
            closed = data(
                await client.call_tool(
                    "close_session", {"project": "porto", "transcript": TRANSCRIPT}
                )
            )
            return names, stored, found, closed

    names, stored, found, closed = run(scenario())
    assert sorted(names) == sorted(READS + WRITES)
    assert found["results"][0]["id"] == stored["memory_id"]
    assert closed["handoff"]["project"] == "porto"
    assert count_rows(elephant.db, "mcp-http", "memories") >= 2  # the note and the session
    assert count_rows(elephant.db, "mcp-http", "handoffs") == 1


def test_a_bound_key_cannot_switch_tenant_by_header(
    http_url: str, elephant: Elephant, http_keys: dict[str, str]
) -> None:
    run_store = elephant.db
    before = count_rows(run_store, "mcp-other", "memories")
    transport = StreamableHttpTransport(
        http_url,
        headers={
            "Authorization": f"Bearer {http_keys['writer']}",
            "X-Elephant-Tenant": "mcp-other",
        },
    )

    async def scenario() -> None:
        async with Client(transport) as client:
            await client.call_tool("store", {"text": "Smuggled into another tenant's memory"})

    with pytest.raises(ToolError, match="forbidden: this API key may not act for tenant"):
        run(scenario())
    assert count_rows(run_store, "mcp-other", "memories") == before


def test_a_read_key_sees_and_calls_only_read_tools(
    http_url: str, http_keys: dict[str, str]
) -> None:
    transport = StreamableHttpTransport(
        http_url, headers={"Authorization": f"Bearer {http_keys['reader']}"}
    )

    async def scenario() -> list[str]:
        async with Client(transport) as client:
            names = [tool.name for tool in await client.list_tools()]
            await client.call_tool("stats", {})
            with pytest.raises(ToolError):
                await client.call_tool("store", {"text": "A reader may not write this note"})
            return names

    assert sorted(run(scenario())) == sorted(READS)


def test_exposure_rule() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    keys_mode = Settings()
    local = Settings.model_validate({"auth": {"mode": "local"}})
    check_bind(keys_mode, "0.0.0.0", where="test")  # keys: any address
    check_bind(local, "127.0.0.1", where="test")
    with pytest.raises(ConfigError, match="not a loopback address"):
        check_bind(local, "0.0.0.0", where="test")
    with pytest.raises(ConfigError, match="replaced by API keys"):
        load_settings(environ={"ELEPHANT_MCP_TOKEN": "short-secret-0123456789"})


def test_a_bad_tenant_header_is_an_mcp_error(http_url: str, http_keys: dict[str, str]) -> None:
    transport = StreamableHttpTransport(
        http_url,
        headers={
            "Authorization": f"Bearer {http_keys['operator']}",
            "X-Elephant-Tenant": "Not A Tenant!",
        },
    )

    async def scenario() -> None:
        async with Client(transport) as client:
            await client.call_tool("stats", {})

    with pytest.raises(ToolError, match="invalid_input: X-Elephant-Tenant"):
        run(scenario())


def test_the_mount_can_be_turned_off(settings: Settings, elephant: Elephant) -> None:
    unmounted = make_settings(
        settings.data_dir,
        embedded={"database": settings.embedded.database},
        mcp={"mount_in_api": False},
    )
    with api_client(unmounted, elephant) as client:
        assert client.post("/mcp", json={}).status_code == 404
        assert client.get("/health").status_code == 200
        # without the mount, REST still wants a key (the issue's ELEPHANT_MCP_MOUNT_IN_API=false)
        del client.headers["Authorization"]
        assert client.get("/stats", headers={"X-Elephant-Tenant": "acme"}).status_code == 401


def test_cli_refuses_keyless_serving_on_a_public_address(tmp_path: Path) -> None:
    env = {"ELEPHANT_DATA_DIR": str(tmp_path)}
    for args in (
        ["mcp", "--http", "--host", "0.0.0.0", "--auth", "local"],
        ["serve", "--host", "0.0.0.0", "--auth", "local"],
    ):
        result = CliRunner().invoke(main, args, env=env)
        assert result.exit_code == 1, result.output
        assert "not a loopback address" in result.output
        assert "elephant keys create" in result.output


# ------------------------------------------------------------------ stdio (`elephant mcp`)


def test_stdio_server_round_trip(settings: Settings, server: ElephantMCP) -> None:
    """A session closed in-process is handed off to `elephant mcp` over stdio (recall profile)."""
    run(call(server, "close_session", project="stdio-project", transcript=TRANSCRIPT))
    env = {
        **os.environ,
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
        "ELEPHANT_WORKER_ENABLED": "false",
        "ELEPHANT_LOG_LEVEL": "WARNING",
    }
    transport = StdioTransport(ELEPHANT, ["mcp", "--profile", "recall"], env=env, keep_alive=False)

    async def scenario() -> tuple[list[str], Any, str]:
        async with Client(transport, timeout=120) as client:
            names = [tool.name for tool in await client.list_tools()]
            handoff = data(await client.call_tool("get_handoff", {"project": "stdio-project"}))
            with pytest.raises(ToolError) as excinfo:
                await client.call_tool("store", {"text": "not in the recall profile"})
            return names, handoff, str(excinfo.value)

    names, handoff, refused = run(scenario())
    assert sorted(names) == sorted(READS)
    assert handoff["decisions"] == ["We decided to keep the importer in Rust."]
    assert "Unknown tool" in refused


# ------------------------------------------------------------------ graph tools


def test_graph_tools_round_trip(settings: Settings, elephant: Elephant) -> None:
    full = build_server(settings, lambda: elephant, profile="full")
    recorded = run(
        call(
            full,
            "record",
            entities=[
                {"name": "Ledger Importer", "entity_type": "artifact", "domain": "software",
                 "observations": ["Parses CSV exports from the bank"]},
                {"name": "Zig", "entity_type": "concept", "domain": "software"},
            ],
            relations=[{"source": "Ledger Importer", "relation_type": "requires", "target": "Zig"}],
        )
    )  # fmt: skip
    assert recorded["entities_created"] == ["Ledger Importer", "Zig"]
    assert recorded["relations_created"] == 1

    async def decide() -> Any:
        async with Client(full) as client:
            arguments = {
                "name": "Ledger importer language",
                "decided": "Write the importer in Rust",
                "because": "It must stream 2 GB files in constant memory",
                "rejected": ["Python with pandas", "Go"],
                "domain": "software",
            }
            return data(await client.call_tool("record_decision", arguments))

    decision = run(decide())
    assert decision["observations_added"] == 4
    opened = run(call(full, "open_nodes", names=["ledger importer language", "Ledger Importer"]))
    kinds = sorted(o["kind"] for o in opened["entities"][0]["observations"])
    assert kinds == ["because", "decided", "rejected", "rejected"]
    assert opened["entities"][1]["relations"][0]["relation_type"] == "depends_on"
    found = run(call(full, "search_nodes", query="ledger importer", limit=1))
    assert found["total_matched"] >= 2 and found["truncated"] is True
    assert len(found["entities"]) == 1
    page = run(call(full, "read_graph", limit=2))
    assert page["total"] >= 3 and page["next_offset"] == 2 and len(page["items"]) == 2
    assert "entities" not in page  # the API's deprecated copy is left out of the tool answer
    following = run(call(full, "read_graph", limit=2, cursor=page["next_cursor"]))
    assert following["items"] and following["items"][0]["name"] not in {
        entity["name"] for entity in page["items"]
    }
    revised = run(
        call(
            full,
            "revise",
            entity="Ledger Importer",
            observations=["Parses CSV exports from the bank"],
            superseded_by="Ledger importer v2",
            superseding_entity={"name": "Ledger importer v2", "entity_type": "artifact",
                                "observations": ["Parses CSV and OFX exports"]},
        )
    )  # fmt: skip
    assert revised["observations_invalidated"] == 1
    removed = run(call(full, "delete_entities", names=["Ledger importer v2", "Nobody"]))
    assert removed == {"entities_deleted": 1, "missing": ["Nobody"]}


def test_graph_tool_bad_input_lists_the_vocabulary(server: ElephantMCP) -> None:
    with pytest.raises(ToolError, match="unknown relation type 'adores'.*depends_on"):
        run(
            call(
                server,
                "create_relations",
                relations=[{"source": "A", "relation_type": "adores", "target": "B"}],
            )
        )
    with pytest.raises(ToolError, match="Unknown tool: 'delete_entities'"):
        run(call(server, "delete_entities", names=["Importer"]))  # standard: no deletes
