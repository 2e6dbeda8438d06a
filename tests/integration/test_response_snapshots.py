"""Snapshots of every surface's responses (issue 28: a restructuring changes no response).

A fixed, deterministic script of calls runs over the REST API (Litestar TestClient), the
MCP adapter (fastmcp's in-process client, the "full" profile) and the CLI (click's runner,
in process), on the real database and embedder with the offline (no) LLM. Each response,
status code and JSON body, is compared with tests/data/snapshots/<surface>.json.

What legitimately varies between runs is normalised, nothing else: ids (``<uuid:N>``,
numbered by first appearance within a surface, so the same id reads the same everywhere),
instants of the run (``<time>``; dates of the run ``<date>``; fixed input dates stay),
durations (``<ms>``), key secrets and prefixes (``<key:N>``, ``<prefix:N>``), cursors, the
test database's name and data directory, and floats rounded to 4 decimals. Field names,
the order of results, counts and status codes are compared as they are.

``ELEPHANT_SNAPSHOT_UPDATE=1`` writes the snapshot files instead of comparing (review the
diff before committing them); otherwise a difference fails with the call and the field.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import re
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastmcp import Client
from fastmcp.exceptions import ToolError
from litestar.testing import TestClient

from app.cli import main
from app.config import Settings
from app.db import Database
from app.mcp.server import build_server
from app.providers.embedder import Embedder
from app.services.runtime import Elephant
from tests.conftest import make_settings, operator_key

# Read once and kept out of the environment: the CLI run in process refuses unknown
# ELEPHANT_* names.
UPDATE = os.environ.pop("ELEPHANT_SNAPSHOT_UPDATE", None) == "1"
SNAPSHOTS = Path(__file__).parents[1] / "data" / "snapshots"
GHOST = "00000000-0000-4000-8000-000000000000"  # an id no row has
BASE_URL = "http://127.0.0.1:7777"

# ------------------------------------------------------------------ normalisation

UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
KEY_RE = re.compile(r"ek_([0-9a-f]{12})_[A-Za-z0-9_-]{43}")
INSTANT_RE = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?"
)
DATE_RE = re.compile(r"(?<![\d-])\d{4}-\d{2}-\d{2}(?![\d:T])")
DURATION_KEYS = re.compile(r"(^|_)(ms|seconds|secs|latency|duration|elapsed)$|_ms$|_s$")
# On-disk sizes (pages allocated) vary; the bytes of stored text do not.
SIZE_KEYS = re.compile(r"^bytes$|^(?!text_)\w*_bytes$")
ORDER_FIELDS = ("score", "created_at", "recorded_at")  # what a list of results is sorted by
CURSOR_KEYS = {"cursor", "next_cursor", "prev_cursor"}


class Normaliser:
    """Rewrites what varies between runs; one per surface, so ids are numbered in order."""

    def __init__(self, replacements: dict[str, str]) -> None:
        self.uuids: dict[str, str] = {}
        self.prefixes: dict[str, str] = {}
        self.replacements = replacements  # literal text of this run -> its placeholder
        self.now = datetime.now(UTC)

    def prefix(self, prefix: str) -> str:
        return self.prefixes.setdefault(prefix, f"<prefix:{len(self.prefixes) + 1}>")

    def __call__(self, value: Any, key: str = "") -> Any:
        if not key:  # a whole response: a key's secret may come after its prefix
            for found in KEY_RE.finditer(json.dumps(value)):
                self.prefix(found.group(1))
            value = settle_ties(value)
        return self.walk(value, key)

    def walk(self, value: Any, key: str) -> Any:
        if isinstance(value, dict):
            if SIZE_KEYS.search(key):  # e.g. stats' tables_bytes: name -> size
                return {str(k): "<bytes>" for k in value}
            if DURATION_KEYS.search(key):  # e.g. explain's timings_ms: step -> ms
                return {str(k): "<ms>" for k in value}
            return {str(k): self.walk(v, str(k)) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.walk(item, key) for item in value]
        if isinstance(value, bool) or value is None:
            return value
        if key == "request_id":
            return "<request-id>"
        if key in CURSOR_KEYS and value is not None:
            return "<cursor>"
        if isinstance(value, int | float) and DURATION_KEYS.search(key):
            return "<ms>"
        if isinstance(value, int) and SIZE_KEYS.search(key):
            return "<bytes>"
        if isinstance(value, float):
            return 0.0 if value == 0 else (round(value, 4) if math.isfinite(value) else str(value))
        if isinstance(value, str):
            return self.text(value)
        return value

    def text(self, value: str) -> str:
        for literal, placeholder in self.replacements.items():
            value = value.replace(literal, placeholder)
        value = KEY_RE.sub(lambda m: f"<key:{self.prefix(m.group(1))}>", value)
        for prefix, placeholder in self.prefixes.items():
            value = value.replace(prefix, placeholder)
        value = UUID_RE.sub(self._uuid, value)
        value = INSTANT_RE.sub(self._instant, value)
        return DATE_RE.sub(self._date, value)

    def _uuid(self, match: re.Match[str]) -> str:
        found = match.group(0).lower()
        if found == GHOST:
            return "<ghost>"
        return self.uuids.setdefault(found, f"<uuid:{len(self.uuids) + 1}>")

    def _instant(self, match: re.Match[str]) -> str:
        text = match.group(0)
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return text
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return "<time>" if abs(moment - self.now) < timedelta(days=3) else text

    def _date(self, match: re.Match[str]) -> str:
        text = match.group(0)
        try:
            day = date.fromisoformat(text)
        except ValueError:
            return text
        return "<date>" if abs((day - self.now.date()).days) <= 40 else text


def settle_ties(value: Any) -> Any:
    """Results tied on their order (the same score, or rows written by one transaction at
    the same created_at or recorded_at) come in an order the app leaves to their random
    ids: sorted here by their content, ids and instants left out; a source's number ``n``
    stays with its position."""
    if isinstance(value, dict):
        return {k: settle_ties(v) for k, v in value.items()}
    if not isinstance(value, list):
        return value
    items = [settle_ties(item) for item in value]
    if not all(isinstance(item, dict) and "id" in item for item in items):
        return items
    field = next((name for name in ORDER_FIELDS if all(name in item for item in items)), None)
    if field is None:
        return items

    def order(item: dict[str, Any]) -> Any:  # scores tie as shown (sums of 1/(k + rank))
        value = item[field]
        return round(value, 4) if isinstance(value, float) else value

    settled: list[Any] = []
    start = 0
    while start < len(items):
        end = start + 1
        while end < len(items) and order(items[end]) == order(items[start]):
            end += 1
        run = sorted(items[start:end], key=_content)
        numbers = [item.get("n") for item in items[start:end]]
        settled.extend(
            {**item, "n": n} if "n" in item else item for item, n in zip(run, numbers, strict=True)
        )
        start = end
    return settled


def _content(item: dict[str, Any]) -> str:
    kept = {k: v for k, v in item.items() if k not in ("id", "n")}
    return INSTANT_RE.sub("", UUID_RE.sub("", json.dumps(kept, sort_keys=True, default=str)))


# ------------------------------------------------------------------ snapshot files


def differences(expected: Any, actual: Any, path: str) -> Iterator[str]:
    """Each place where ``actual`` differs from ``expected``, by JSON path."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in expected.keys() - actual.keys():
            yield f"{path}.{key}: missing (expected {json.dumps(expected[key])[:200]})"
        for key in actual.keys() - expected.keys():
            yield f"{path}.{key}: unexpected field ({json.dumps(actual[key])[:200]})"
        if list(expected) != list(actual) and expected.keys() == actual.keys():
            yield f"{path}: field order {list(expected)} != {list(actual)}"
        for key in expected.keys() & actual.keys():
            yield from differences(expected[key], actual[key], f"{path}.{key}")
    elif isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            yield f"{path}: {len(expected)} items expected, {len(actual)} got"
        for index, (old, new) in enumerate(zip(expected, actual, strict=False)):
            yield from differences(old, new, f"{path}[{index}]")
    elif expected != actual:
        yield f"{path}: expected {json.dumps(expected)[:300]}, got {json.dumps(actual)[:300]}"


def check(**surfaces: dict[str, Any]) -> None:
    """Write (record mode) or compare each surface's snapshot file."""
    problems = [line for surface, calls in surfaces.items() for line in compare(surface, calls)]
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def compare(surface: str, calls: dict[str, Any]) -> list[str]:
    path = SNAPSHOTS / f"{surface}.json"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(calls, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return []
    if not path.exists():
        return [f"no snapshot {path}: run with ELEPHANT_SNAPSHOT_UPDATE=1"]
    expected = json.loads(path.read_text(encoding="utf-8"))
    actual = json.loads(json.dumps(calls))  # tuples as lists, keys as strings
    problems: list[str] = []
    for name in expected.keys() - actual.keys():
        problems.append(f"{name}: call missing")
    for name in actual.keys() - expected.keys():
        problems.append(f"{name}: call not in the snapshot")
    for name in expected:
        if name in actual:
            found = list(differences(expected[name], actual[name], ""))
            problems.extend(f"{name}: {line}" for line in found[:20])
            if len(found) > 20:
                problems.append(f"{name}: ... and {len(found) - 20} more")
    if problems:
        problems.insert(0, f"{surface}: {len(problems)} differences from {path}:")
    return problems


# ------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def snap_settings(pg_data_dir: Path, new_database: Callable[..., str]) -> Settings:
    """A fresh database; access statistics are not flushed during the run (a background
    batch would land at a different moment each run)."""
    name = new_database("response_snapshots")
    return make_settings(
        pg_data_dir,
        embedded={"database": name},
        lifecycle={"access_flush_seconds": 600},
        tenant={"default": "snap-mcp"},
    )


@pytest.fixture(scope="module")
def runtime(snap_settings: Settings, embedder: Embedder) -> Iterator[Elephant]:
    """The runtime as conftest's ``elephant`` builds it: real embedder, offline (no) LLM."""
    db = Database(snap_settings)
    db.open()
    elephant = Elephant(settings=snap_settings, db=db, embedder=embedder, llm=None)
    try:
        yield elephant
    finally:
        elephant.close_providers()
        db.close()


def run_replacements(settings: Settings) -> dict[str, str]:
    return {
        str(settings.data_dir): "<data_dir>",
        settings.embedded.database: "<database>",
    }


# ------------------------------------------------------------------ REST

NOTES = [
    {
        "text": "Alice lives in Paris and works at Airbus as an engineer since 2019",
        "source": "chat",
        "importance": 70,
        "metadata": {"k": 1},
        "occurred_at": "2024-03-01",
    },
    {
        "text": "Bruno moved to Lisbon in 2021 to work for Feedzai as a data scientist",
        "source": "email",
        "occurred_at": "2024-04-02T10:00:00Z",
    },
    {
        "text": "Carla adopted a grey cat named Miso from a shelter in Leeds in May 2023",
        "source": "chat",
    },
]
TURNS = [
    {"speaker": "Lena", "text": "I adopted a cat named Miso yesterday."},
    {"speaker": "Tom", "text": "Congrats! What breed is Miso?"},
    {"speaker": "Lena", "text": "A Norwegian forest cat, she is two years old."},
    {"speaker": "Tom", "text": "Does she get along with your dog Rex?"},
    {"speaker": "Lena", "text": "Rex is scared of her, but they share the sofa now."},
    {"speaker": "Tom", "text": "I start my new job at Siemens in Munich next Monday."},
]
TRANSCRIPT = (
    "Ines: We decided to keep the importer in Rust.\n"
    "Omar: Should the CLI also accept CSV?\n"
    "Ines: Next I will write the parser tests."
)
GRAPH: dict[str, Any] = {
    "entities": [
        {"name": "Parser", "entity_type": "artifact", "observations": ["Reads OFX files"]},
        {"name": "OFX", "entity_type": "concept"},
        {"name": "Importer", "entity_type": "artifact", "observations": ["Written in Rust"]},
    ],
    "relations": [
        {"source": "Parser", "relation_type": "uses", "target": "OFX"},
        {"source": "Importer", "relation_type": "uses", "target": "Parser"},
    ],
}


class Rest:
    """Calls the API and records each response, normalised, under a readable label."""

    def __init__(self, client: TestClient, tenant: str, normalise: Normaliser) -> None:  # type: ignore[type-arg]
        self.client = client
        self.tenant = tenant
        self.normalise = normalise
        self.calls: dict[str, Any] = {}

    def __call__(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        label: str = "",
    ) -> Any:
        sent = {"X-Elephant-Tenant": self.tenant, **(headers or {})}
        response = self.client.request(method, path, json=body, params=params, headers=sent)
        try:
            payload: Any = response.json()
        except ValueError:
            payload = {"text": response.text}
        name = f"{len(self.calls) + 1:03d} {method} {path}" + (f" [{label}]" if label else "")
        self.calls[self.normalise.text(name)] = {
            "request": self.normalise({"params": params, "body": body}),
            "status": response.status_code,
            "body": self.normalise(payload),
        }
        return payload


def test_rest_responses(snap_settings: Settings, runtime: Elephant) -> None:
    tenant = "snap-rest"
    key = operator_key(runtime.db, "snapshots")
    normalise = Normaliser(run_replacements(snap_settings))
    normalise.prefix(key.split("_")[1])
    app_client = TestClient(app=_app(snap_settings, runtime), base_url=BASE_URL)
    app_client.headers["Authorization"] = f"Bearer {key}"
    with app_client as client:
        call = Rest(client, tenant, normalise)
        rest_script(call, client)
        schema = client.get("/schema/openapi.json")
    openapi = {"status": schema.status_code, "body": schema.json()}
    check(rest=call.calls, openapi={"GET /schema/openapi.json": openapi})


def _app(settings: Settings, runtime: Elephant) -> Any:
    from app.api import create_app

    return create_app(settings, runtime)


def rest_script(call: Rest, client: TestClient) -> None:  # type: ignore[type-arg]
    # --- operations, open
    call("GET", "/health")
    # --- the write path
    stored = [call("POST", "/commit", note, params={"wait": "true"}) for note in NOTES]
    call("POST", "/commit", NOTES[0], label="duplicate")
    call("POST", "/commit", {"text": "ok"}, label="rejected")
    call("POST", "/commit", {"text": "lol", "force": True}, label="forced")
    conversation = call(
        "POST",
        "/commit_conversation",
        {
            "turns": TURNS,
            "session_date": "2024-05-08",
            "conversation_id": "snap-c1",
            "source": "chat",
        },
        params={"wait": "true"},
    )
    closed = call(
        "POST",
        "/sessions/close",
        {"project": "importer", "transcript": TRANSCRIPT, "session_date": "2024-06-01"},
    )
    memory_id = stored[0]["memory_id"]
    # --- reads
    call("GET", "/search", params={"query": "Where does Alice work?"})
    call("GET", "/search", params={"query": "Where does Alice work?", "explain": "true"})
    call("GET", "/search", params={"q": "cat Miso", "limit": 3, "source": "chat"})
    call("POST", "/search", {"query": "Who moved to Lisbon?", "limit": 5})
    call(
        "POST",
        "/search",
        {"query": "Norwegian forest cat", "filters": {"kind": ["window"]}, "limit": 2},
    )
    call("GET", "/stats")
    call("GET", "/memories")
    call("GET", "/memories", params={"kind": "note", "limit": 2})
    page = call("GET", "/memories", params={"kind": "window", "limit": 1})
    if page.get("next_cursor"):
        call("GET", "/memories", params={"kind": "window", "cursor": page["next_cursor"]})
    call("GET", f"/memories/{memory_id}")
    call("PATCH", f"/memories/{memory_id}", {"importance": 80, "metadata": {"k": 2}})
    call("GET", "/facts")
    alice = call("GET", "/facts", params={"memory_id": memory_id})
    call("GET", "/facts", params={"subject": "alice", "status": "active"})
    fact_id = alice["items"][0]["id"]  # the only fact of the note: a fixed choice
    call("GET", f"/facts/{fact_id}")
    call("GET", f"/facts/{fact_id}/history")
    call("POST", "/feedback", {"memory_id": stored[1]["memory_id"], "helpful": True})
    call("POST", "/proactive", {"messages": ["I am thinking about getting a cat"]})
    call("POST", "/reflect", {"query": "Where does Bruno work?"})
    call("POST", "/reflect", {"q": "Where does Alice live?"}, label="deprecated q")
    call("GET", "/conversations")
    call("GET", "/conversations/snap-c1")
    call("GET", f"/conversations/{conversation['conversation_id']}", label="by uuid")
    call("GET", "/handoffs")
    call("GET", "/handoff", params={"project": "importer"})
    call("GET", "/contradictions")
    call("GET", "/amac/metrics", params={"recent": 5})
    decisions = call("GET", "/amac/decisions")
    call("GET", "/amac/decisions", params={"decision": "rejected"})
    rejected = [
        entry["id"]
        for entry in decisions.get("decisions", decisions.get("items", []))
        if entry.get("decision") == "rejected"
    ]
    if rejected:
        call("POST", f"/amac/decisions/{rejected[-1]}/admit")
        call("POST", f"/amac/decisions/{rejected[-1]}/admit", label="again")
    call("PUT", "/amac/threshold", {"threshold": 5.5})
    call("PUT", "/amac/threshold", {"threshold": None})
    call("GET", "/jobs")
    call("GET", "/jobs", params={"status": "done", "limit": 2})
    call("GET", "/usage", params={"days": 3})
    call("GET", "/tenant/owner")
    call("PUT", "/tenant/owner", {"owner": "Alice"})
    call("GET", "/tenant/owner", label="after")
    call("PUT", "/tenant/owner", {"owner": None})
    # --- the graph
    call("POST", "/graph/record", GRAPH)
    call("POST", "/graph/record", GRAPH, label="again")
    call(
        "POST",
        "/graph/decisions",
        {"name": "Queue", "decided": "Postgres", "because": "simple", "rejected": ["Kafka"]},
    )
    call("POST", "/graph/entities", {"entities": [{"name": "Falcon", "entity_type": "task"}]})
    call(
        "POST",
        "/graph/relations",
        {"relations": [{"source": "Falcon", "relation_type": "uses", "target": "Parser"}]},
    )
    call(
        "POST",
        "/graph/observations",
        {"observations": [{"entity": "Falcon", "contents": ["fast", "written in Go"]}]},
    )
    call(
        "POST",
        "/graph/observations/invalidate",
        {"observations": [{"entity": "Falcon", "observations": ["fast"]}], "reason": "slow now"},
    )
    call("POST", "/graph/revise", {"entity": "Falcon", "superseded_by": "Importer"})
    call("GET", "/graph/search", params={"query": "parser"})
    call("GET", "/graph/search", params={"q": "pars", "limit": 1})
    call("POST", "/graph/open", {"names": ["Parser", "Importer", "Nobody"]})
    call("GET", "/graph/entities")
    call("GET", "/graph/entities", params={"summary": "false", "limit": 2})
    call("GET", "/graph", params={"query": "Parser", "hops": 2})
    call("GET", "/graph")
    call(
        "POST",
        "/graph/relations/invalidate",
        {"relations": [{"source": "Falcon", "relation_type": "uses", "target": "Parser"}]},
    )
    call(
        "POST",
        "/graph/observations/delete",
        {"observations": [{"entity": "Falcon", "observations": ["written in Go"]}]},
    )
    call(
        "POST",
        "/graph/relations/delete",
        {"relations": [{"source": "Importer", "relation_type": "uses", "target": "Parser"}]},
    )
    call("POST", "/graph/entities/delete", {"names": ["Falcon", "Nobody"]})
    # --- keys and audit
    created = call("POST", "/keys", {"tenant": "snap-rest", "scopes": ["read"], "name": "reader"})
    writer = call(
        "POST", "/keys", {"tenant": "snap-rest", "scopes": ["read", "write"], "name": "writer"}
    )
    call("GET", "/keys")
    call("GET", "/keys", params={"all_tenants": "true"}, label="all tenants")
    # --- errors: one per kind
    call("POST", "/commit", {"text": ""}, label="422 blank text")
    call("POST", "/commit", {"text": "fine text", "colour": "red"}, label="422 unknown field")
    call("GET", "/search", params={"query": "x", "limit": 0}, label="422 limit")
    call("POST", "/commit", {"text": "a fine note"}, headers={"X-Elephant-Tenant": "Not A!"})
    call("GET", f"/memories/{GHOST}", label="404")
    call("GET", f"/facts/{GHOST}", label="404")
    call("GET", "/conversations/no-such-conversation", label="404")
    call("GET", "/handoff", params={"project": "never-closed"}, label="404")
    call("POST", "/feedback", {"memory_id": GHOST, "helpful": True}, label="404")
    call("POST", "/amac/decisions/999999999/admit", label="404")
    call("GET", "/stats", headers={"Authorization": ""}, label="401 no key")
    call("GET", "/stats", headers={"Authorization": "Bearer nope"}, label="401 bad key")
    reader = {"Authorization": f"Bearer {created['key']}"}
    call("POST", "/commit", {"text": "Reader tries to write"}, headers=reader, label="403 scope")
    call("GET", "/keys", headers=reader, label="403 admin")
    call(
        "GET",
        "/stats",
        headers={**reader, "X-Elephant-Tenant": "other-tenant"},
        label="403 tenant",
    )
    call("GET", "/stats", headers={"Authorization": f"Bearer {writer['key']}"}, label="writer")
    call("POST", f"/keys/{created['prefix']}/revoke")
    call("GET", "/stats", headers=reader, label="401 revoked")
    call("GET", "/keys", params={"include_revoked": "true"})
    call("GET", "/audit", params={"limit": 10})
    # --- erasure, last
    call("POST", "/erase", {"subject": "Bruno", "dry_run": True})
    call("DELETE", f"/facts/{fact_id}")
    call("DELETE", f"/memories/{stored[2]['memory_id']}")
    call("DELETE", f"/memories/{GHOST}", label="404")
    call("POST", "/erase", {"conversation_id": "snap-c1"})
    call("GET", "/stats", label="after erasure")
    # --- Prometheus: the metric families and their types, as declared (their samples
    # count whatever this process ran before, so a labelled family may have none yet,
    # and its ``_created`` companion appears only with a first sample)
    metrics = client.get("/metrics")
    call.calls["metrics names"] = {
        "status": metrics.status_code,
        "body": sorted(
            {
                line.removeprefix("# TYPE ")
                for line in metrics.text.splitlines()
                if line.startswith("# TYPE ") and "_created " not in line
            }
        ),
    }
    del closed


# ------------------------------------------------------------------ MCP


def test_mcp_responses(snap_settings: Settings, runtime: Elephant) -> None:
    normalise = Normaliser(run_replacements(snap_settings))
    server = build_server(snap_settings, lambda: runtime, profile="full")
    calls: dict[str, Any] = {}

    async def scenario() -> None:
        async with Client(server) as client:
            tools = await client.list_tools()
            calls["list_tools"] = [
                {
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.input_schema,
                    "annotations": (
                        tool.annotations.model_dump(by_alias=True, exclude_none=True)
                        if tool.annotations
                        else None
                    ),
                }
                for tool in tools
            ]
            templates = await client.list_resource_templates()
            calls["list_resource_templates"] = [
                {"uri": template.uri_template, "name": template.name} for template in templates
            ]
            resources = await client.list_resources()
            calls["list_resources"] = [
                {"uri": str(resource.uri), "name": resource.name} for resource in resources
            ]
            prompts = await client.list_prompts()
            calls["list_prompts"] = [prompt.name for prompt in prompts]

            async def tool(name: str, /, label: str = "", **arguments: Any) -> Any:
                title = f"{len(calls) + 1:03d} {name}" + (f" [{label}]" if label else "")
                try:
                    result = await client.call_tool(name, arguments)
                    out: Any = {"ok": result.structured_content}
                except ToolError as error:
                    out = {"error": str(error)}
                calls[title] = {"arguments": normalise(arguments), **normalise(out)}
                return out.get("ok")

            stored = await tool(
                "store",
                text="Pia moved to Graz in March 2024 to work at AVL on engines",
                source="chat",
                occurred_at="2024-03-01",
            )
            await tool("store", text="Jonas repairs clocks in Ghent", importance=60)
            await tool("store", text="ok", label="rejected")
            await tool("store", text="", label="invalid")
            await tool(
                "commit_conversation",
                turns=TURNS,
                session_date="2024-05-08",
                conversation_id="mcp-c1",
            )
            await tool("search", query="Where does Pia work?")
            await tool("search", query="cat", limit=2, kind=["window"])
            await tool("search", query="tea", limit=0, label="invalid")
            if stored:
                await tool("feedback", id=stored["memory_id"], helpful=True)
            await tool("feedback", id=GHOST, helpful=True, label="not found")
            await tool("stats")
            await tool("reflect", query="Where did Pia move?")
            await tool("close_session", project="importer", transcript=TRANSCRIPT)
            await tool("get_handoff", project="importer")
            await tool("get_handoff", project="never-closed", label="not found")
            contents = await client.read_resource("elephant://handoff/importer")
            calls["read_resource handoff"] = normalise([c.text for c in contents])
            await tool("record", **GRAPH)
            await tool("record_decision", name="Queue", decided="Postgres", because="simple")
            await tool("create_entities", entities=[{"name": "Falcon", "entity_type": "task"}])
            await tool(
                "create_relations",
                relations=[{"source": "Falcon", "relation_type": "uses", "target": "Parser"}],
            )
            await tool("add_observations", observations=[{"entity": "Falcon", "contents": ["x"]}])
            await tool(
                "invalidate_observations",
                observations=[{"entity": "Falcon", "observations": ["x"]}],
            )
            await tool("revise", entity="Falcon", superseded_by="Importer")
            await tool("search_nodes", query="parser", limit=2)
            await tool("open_nodes", names=["Parser", "Importer"])
            await tool("read_graph", limit=2)
            await tool(
                "delete_relations",
                relations=[{"source": "Importer", "relation_type": "uses", "target": "Parser"}],
            )
            await tool(
                "delete_observations",
                observations=[{"entity": "Parser", "observations": ["Reads OFX files"]}],
            )
            await tool("delete_entities", names=["Falcon", "Nobody"])
            await tool("read_graph", limit=10, label="after deletes")

    asyncio.run(scenario())
    calls["list_tools"] = normalise(calls["list_tools"])
    check(mcp=calls)


# ------------------------------------------------------------------ CLI


def test_cli_responses(snap_settings: Settings, runtime: Elephant) -> None:
    normalise = Normaliser(run_replacements(snap_settings))
    env = {
        "ELEPHANT_DATA_DIR": str(snap_settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": snap_settings.embedded.database,
        "ELEPHANT_TENANT_DEFAULT": "snap-cli",
    }
    runner = CliRunner()
    calls: dict[str, Any] = {}

    def cli(*args: str, stdin: str | None = None, parse: bool = True) -> Any:
        result = runner.invoke(main, list(args), input=stdin, env=env)
        output: Any = result.output
        if parse:
            with contextlib.suppress(ValueError):
                output = json.loads(result.output)
        calls[normalise.text(f"{len(calls) + 1:03d} elephant {' '.join(args)}")] = {
            "exit_code": result.exit_code,
            "output": normalise(output),
        }
        return output

    lines = "\n".join(
        json.dumps(note)
        for note in (
            {"text": "Quentin builds violins in Cremona since 2010", "occurred_at": "2024-02-02"},
            {"text": "Rosa teaches chemistry at a school in Porto", "occurred_at": "2024-02-03"},
        )
    )
    source = snap_settings.data_dir / "snapshot-notes.jsonl"
    source.write_text(lines + "\n", encoding="utf-8")
    try:
        cli("ingest", str(source), "--no-extract", parse=False)
    finally:
        source.unlink()
    cli("search", "Who builds violins?")
    cli("graph", "record", "-", stdin=json.dumps(GRAPH))
    cli("graph", "open", "parser")
    cli("graph", "search", "pars", "--limit", "1")
    cli("graph", "show", "--limit", "2")
    cli("graph", "record", "-", stdin='{"entitys": []}', parse=False)
    cli("keys", "create", "--tenant", "snap-cli", "--scopes", "read", "--name", "cli-reader")
    cli("keys", "list", "--tenant", "snap-cli")
    cli("erase", "--subject", "Rosa", "--dry-run")
    cli("search", "", parse=False)
    cli("version", parse=False)
    check(cli=calls)
