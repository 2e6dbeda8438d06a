"""The Python client (elephant_client) against the real API served by uvicorn on 127.0.0.1,
over the real database and model: sync and async, keys and tenant isolation, errors,
retries (against a scripted http.server), paging, and the README quick start as written (the docs repeat it)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from app.api import create_app
from app.config import Settings
from app.db import Database
from app.providers.embedder import Embedder
from app.providers.llm import LLMUsage
from app.services.ops.usage import record_usage
from app.services.runtime import Elephant as Runtime
from elephant_client import (
    NO_RETRY,
    AsyncElephant,
    CommitResult,
    Conflict,
    ConnectionFailed,
    Elephant,
    ElephantError,
    Forbidden,
    InvalidInput,
    Memory,
    NotFound,
    RateLimited,
    RetryPolicy,
    SearchResult,
    Turn,
    Unauthorized,
    Unavailable,
    _unasync,
)
from tests.conftest import free_port, make_settings, operator_key, serve_in_thread

ROOT = Path(__file__).resolve().parents[2]
FAST = RetryPolicy(attempts=3, backoff_s=0.0, max_backoff_s=0.0)


# ------------------------------------------------------------------ servers


@contextlib.contextmanager
def served(settings: Settings, db: Database, embedder: Embedder) -> Iterator[str]:
    """The API served by uvicorn in a thread on a free loopback port; yields its URL."""
    runtime = Runtime(settings=settings, db=db, embedder=embedder, llm=None)
    with serve_in_thread(create_app(settings, runtime, bind="127.0.0.1")) as url:
        yield url


@pytest.fixture(scope="module")
def url(settings: Settings, db: Database, embedder: Embedder) -> Iterator[str]:
    """The API in its default mode: API keys."""
    with served(settings, db, embedder) as base:
        yield base


@pytest.fixture(scope="module")
def operator(db: Database) -> str:
    return operator_key(db, "client tests")


def client(url: str, key: str, tenant: str | None = None, **kwargs: Any) -> Elephant:
    return Elephant(url, api_key=key, tenant=tenant, **kwargs)


def unique(text: str) -> str:
    """A text no other test stored (exact dedup is per content hash)."""
    return f"{text} [{uuid.uuid4().hex[:8]}]"


# ------------------------------------------------------------------ sync, every endpoint


def test_sync_client_covers_the_write_and_read_paths(url: str, operator: str) -> None:
    with client(url, operator, "client_sync") as memory:
        health = memory.health()
        assert health.status in ("ok", "degraded")
        assert health.database["reachable"] is True

        text = unique("Priya moved the Atlas launch from March 3 to April 14 after the audit.")
        stored = memory.commit(text, source="notes", importance=70, force=True)
        assert isinstance(stored, CommitResult)
        assert stored.status == "stored" and stored.memory_id is not None
        assert stored.gate.decision == "forced"
        again = memory.commit(text, source="notes")  # what a retried commit gets
        assert (again.status, again.memory_id) == ("duplicate", stored.memory_id)

        record = memory.get_memory(stored.memory_id)
        assert isinstance(record, Memory)
        assert (record.id, record.text, record.source) == (stored.memory_id, text, "notes")
        assert record.created_at.tzinfo is not None
        assert record.seen_count >= 2
        updated = memory.update_memory(stored.memory_id, importance=90, metadata={"tag": "t1"})
        assert (updated.importance, updated.metadata.get("tag")) == (90, "t1")
        assert "tag" not in memory.update_memory(stored.memory_id, metadata={"tag": None}).metadata

        conversation = memory.commit_conversation(
            [
                {"speaker": "dana", "text": "The Atlas review is moved to Thursday."},
                {"speaker": "lee", "text": "Then I will book room 4B for Thursday at 10."},
                {"speaker": "dana", "text": "Good, and invite the fuel team."},
            ],
            conversation_id=unique("atlas-review"),
            session_date=datetime(2025, 3, 1, 9, 30, tzinfo=UTC),
            force=True,
        )
        assert conversation.turns == 3
        assert conversation.windows.stored + conversation.windows.duplicate >= 1

        found = memory.search("when is the Atlas launch?", limit=5, consistency="primary")
        assert isinstance(found, SearchResult)
        assert found.count == len(found.results) >= 1
        assert any(hit.text == text for hit in found.results), [h.text for h in found.results]
        top = found.results[0]
        assert top.created_at.tzinfo is not None and top.ranks is not None
        explained = memory.search("Atlas launch", limit=2, explain=True)
        assert explained.explain is not None and "timings_ms" in explained.explain
        budgeted = memory.search("Atlas launch", max_tokens=4000, explain=True)
        assert budgeted.explain is not None and budgeted.explain["max_tokens"] == 4000
        assert 0 < budgeted.explain["tokens"] <= 4000
        whole = memory.search("Atlas and Orion launch", decompose=False, explain=True)
        assert whole.explain is not None and whole.explain["sub_queries"] == []

        reply = memory.reflect("When is the Atlas launch?", limit=3)
        assert reply.answer is None and reply.note  # no LLM in the tests: says why
        assert any(text in source.text for source in reply.sources)

        suggestions = memory.proactive(["What about the Atlas launch date?"], max_results=3)
        assert suggestions.query

        stats = memory.stats()
        assert stats.tenant == "client_sync" and stats.memories.total >= 2

        marked = memory.feedback(memory_id=stored.memory_id, helpful=True)
        assert marked.memory_id == stored.memory_id and marked.delta > 0

        metrics = memory.gate_metrics(recent=5)
        assert metrics.counts.total >= 1
        assert memory.set_gate_threshold(4.5).threshold == 4.5
        assert memory.gate_metrics().threshold == 4.5
        assert memory.set_gate_threshold(None).threshold != 4.5

        assert memory.set_owner("Priya").owner == "Priya"
        owner = memory.owner()
        assert (owner.owner, owner.source) == ("Priya", "tenant")

        page = memory.memories(source="notes", limit=10)
        assert [item.id for item in page.items] == [stored.memory_id]
        facts = memory.facts(limit=5)
        for fact in facts.items:
            assert memory.get_fact(fact.id).id == fact.id
        assert memory.contradictions(limit=5).items is not None
        jobs = memory.jobs(limit=5)
        assert isinstance(jobs.counts, dict)

        dry = memory.erase(source="notes", dry_run=True)
        assert dry.dry_run is True and dry.removed.get("memories") == 1
        assert memory.get_memory(stored.memory_id).id == stored.memory_id  # still there
        report = memory.delete_memory(stored.memory_id)
        assert report.dry_run is False and report.total >= 1
        with pytest.raises(NotFound) as missing:
            memory.get_memory(stored.memory_id)
        assert missing.value.status == 404 and missing.value.code == "not_found"
        assert missing.value.request_id


def test_sessions_and_handoff(url: str, operator: str) -> None:
    with client(url, operator, "client_sessions") as memory, pytest.raises(NotFound):
        memory.handoff("rocket")
        closed = memory.close_session(
            "rocket",
            transcript="dana: We chose the titanium valve.\nlee: Next, test it on Monday.",
        )
        assert closed.project == "rocket" and closed.turns == 2
        handoff = memory.handoff("rocket")
        assert handoff.id == closed.handoff.id
        assert handoff.created_at.tzinfo is not None


def test_graph_endpoints(url: str, operator: str) -> None:
    with client(url, operator, "client_graph") as memory:
        written = memory.graph_record(
            entities=[
                {
                    "name": "Atlas",
                    "entity_type": "artifact",
                    "observations": ["Launch on April 14"],
                },
                {"name": "Priya", "entity_type": "person"},
            ],
            relations=[{"source": "Priya", "relation_type": "investigates", "target": "Atlas"}],
        )
        assert sorted(written.entities_created) == ["Atlas", "Priya"]
        assert written.relations_created == 1 and written.observations_added == 1

        decided = memory.graph_decision(
            "Valve choice", decided="titanium valve", because="lighter", rejected=["steel"]
        )
        assert decided.entities_created
        added = memory.graph_add_observations([{"entity": "Atlas", "contents": ["Budget is 2M"]}])
        assert added.observations_added == 1
        memory.graph_create_entities([{"name": "Fuel team", "entity_type": "organization"}])
        memory.graph_create_relations(
            [{"source": "Fuel team", "relation_type": "supports", "target": "Atlas"}]
        )

        search = memory.graph_search("Atlas", limit=5)
        assert any(node.name == "Atlas" for node in search.entities)
        opened = memory.graph_open(["Atlas", "Nobody"])
        assert opened.missing == ["Nobody"]
        atlas = opened.entities[0]
        assert {o.content for o in atlas.observations} >= {"Launch on April 14", "Budget is 2M"}
        assert atlas.observations[0].recorded_at.tzinfo is not None
        near = memory.graph_neighbourhood("Atlas", hops=1)
        assert {"Atlas", "Priya"} <= {node.name for node in near.nodes}
        summaries = memory.graph_entities(limit=50)
        assert {"Atlas", "Priya", "Fuel team"} <= {e.name for e in summaries.items}
        full = memory.graph_entities(summary=False, limit=50)
        assert all(isinstance(node.observations, list) for node in full.items)

        invalidated = memory.graph_invalidate_observations(
            [{"entity": "Atlas", "observations": ["Budget is 2M"]}], reason="re-planned"
        )
        assert invalidated.observations_invalidated == 1
        closed = memory.graph_invalidate_relations(
            [{"source": "Fuel team", "relation_type": "supports", "target": "Atlas"}]
        )
        assert closed.relations_invalidated == 1
        revised = memory.graph_revise(
            "Valve choice",
            superseded_by="Valve choice 2",
            superseding_entity={"name": "Valve choice 2", "entity_type": "decision"},
            reason="steel is cheaper after all",
        )
        assert revised.revised and revised.superseded_by
        assert (
            memory.graph_delete_observations(
                [{"entity": "Atlas", "observations": ["Launch on April 14"]}]
            ).observations_deleted
            == 1
        )
        assert (
            memory.graph_delete_relations(
                [{"source": "Priya", "relation_type": "investigates", "target": "Atlas"}]
            ).relations_deleted
            == 1
        )
        gone = memory.graph_delete_entities(["Fuel team", "Nobody"])
        assert gone.entities_deleted == 1 and gone.missing == ["Nobody"]


def test_conversations_and_handoffs(url: str, operator: str) -> None:
    source = f"meetings-{uuid.uuid4().hex[:8]}"
    external = unique("atlas-standup")
    turns: list[Turn] = [
        {"speaker": "dana", "text": "The Atlas standup moves to 9:15 from Monday."},
        {"speaker": "lee", "text": "Then I will move the fuel review to 10:30."},
        {"speaker": "dana", "text": "Good, and Omar presents the valve test results."},
    ]
    with client(url, operator, "client_conversations") as memory:
        committed = memory.commit_conversation(
            turns, conversation_id=external, source=source, window_size=2, stride=1, force=True
        )
        later = memory.commit_conversation(
            [{"speaker": "omar", "text": "The valve test passed at 310 bar."}],
            conversation_id=unique("valve-test"),
            source=source,
            force=True,
        )

        page = memory.conversations(source=source, limit=10)
        assert [c.id for c in page.items] == [later.conversation_id, committed.conversation_id]
        assert page.next_cursor is None
        summary = page.items[1]
        assert (summary.external_id, summary.source, summary.turns) == (external, source, 3)
        assert summary.speakers == ["dana", "lee"] and summary.created_at.tzinfo is not None
        assert summary.windows == committed.windows.stored
        walked = [c.id for c in memory.iter_conversations(source=source, page_size=1)]
        assert walked == [c.id for c in page.items]

        transcript = memory.get_conversation(external)  # the caller's id...
        assert memory.get_conversation(committed.conversation_id) == transcript  # ...or its own
        assert transcript.conversation.id == committed.conversation_id
        assert [(t.seq, t.speaker, t.text) for t in transcript.turns] == [
            (i, turn["speaker"], turn["text"]) for i, turn in enumerate(turns)
        ]
        windows = [(w.turn_start, w.turn_end, w.status, w.memory_id) for w in transcript.windows]
        assert windows == [
            (w.turn_start, w.turn_end, w.status, w.memory_id) for w in committed.windows.items
        ]
        assert [w.decision for w in transcript.windows] == ["forced"] * len(windows)
        assert transcript.handoffs == []
        with pytest.raises(NotFound):
            memory.get_conversation("no-such-conversation")

        closed = [
            memory.close_session("atlas", transcript=f"dana: Session {i} chose valve {i}.")
            for i in range(3)
        ]
        handoffs = memory.handoffs(project="atlas", limit=10)
        assert [h.id for h in handoffs.items] == [c.handoff.id for c in reversed(closed)]
        assert handoffs.items[0].created_at.tzinfo is not None
        assert [h.id for h in memory.iter_handoffs(project="atlas", page_size=2)] == [
            h.id for h in handoffs.items
        ]
        assert memory.handoffs(project="nobody").items == []
        session = memory.get_conversation(closed[0].conversation_id)
        assert session.conversation.project == "atlas"
        assert [h.id for h in session.handoffs] == [closed[0].handoff.id]


def test_gate_decisions_and_admitting_a_rejected_note(url: str, operator: str) -> None:
    with client(url, operator, "client_gate_log") as memory:
        rejected = memory.commit("ok thanks")  # the offline gate finds nothing to keep
        assert rejected.status == "rejected" and rejected.memory_id is None
        stored = memory.commit(unique("Omar renewed the Atlas insurance until May 2027."))

        decisions = memory.gate_decisions(decision="rejected", kind="note")
        assert len(decisions.items) == 1
        decision = decisions.items[0]
        assert (decision.decision, decision.kind, decision.text_preview) == (
            "rejected",
            "note",
            "ok thanks",
        )
        assert decision.rejected_text == "ok thanks" and decision.admittable
        assert decision.created_at.tzinfo is not None
        everything = memory.gate_decisions(limit=200).items
        assert [d.id for d in everything[:2]] == [everything[0].id, decision.id]
        assert (everything[0].decision, everything[0].memory_id) == ("accepted", stored.memory_id)
        assert [d.id for d in memory.iter_gate_decisions(page_size=1)] == [d.id for d in everything]

        admitted = memory.admit_decision(decision.id)
        assert (admitted.decision_id, admitted.status) == (decision.id, "stored")
        assert admitted.memory_id is not None and admitted.gate.decision == "forced"
        assert memory.get_memory(admitted.memory_id).text == "ok thanks"
        forced = memory.gate_decisions(decision="forced").items
        assert [d.id for d in forced] == [admitted.admission_id]
        assert str(decision.id) in forced[0].reason
        after = memory.gate_decisions(decision="rejected").items[0]
        assert (after.rejected_text, after.admittable) == (None, False)

        with pytest.raises(Conflict) as twice:
            memory.admit_decision(decision.id)
        assert twice.value.status == 409
        with pytest.raises(InvalidInput):  # only a rejected note can be admitted
            memory.admit_decision(forced[0].id)
        with pytest.raises(NotFound):
            memory.admit_decision(10**12)


def test_usage_counts_the_recorded_llm_calls(url: str, operator: str, db: Database) -> None:
    tenant = "client_usage"
    with db.tenant(tenant) as conn:
        for tokens_in, ok in ((1200, True), (800, True), (50, False)):
            record_usage(
                conn,
                tenant,
                "reflect",
                LLMUsage("test", "tiny", tokens_in, tokens_in // 10, 250.0, 1),
                ok=ok,
            )
        record_usage(conn, tenant, "extract", LLMUsage("test", "tiny", 300, 40, 90.0, 1), ok=True)

    async def scenario() -> None:
        async with AsyncElephant(url, api_key=operator, tenant=tenant) as memory:
            report = await memory.usage(days=7)
            today = datetime.now(UTC).date()
            assert (report.days, report.until, report.since) == (
                7,
                today,
                today - timedelta(days=6),
            )
            assert isinstance(report.since, date)
            total = report.total
            assert (total.calls, total.failures) == (4, 1)
            assert (total.tokens_in, total.tokens_out) == (2350, 245)
            assert report.operations == ["extract", "reflect"]
            by_operation = {row.operation: row for row in report.by_operation}
            assert (by_operation["reflect"].calls, by_operation["extract"].calls) == (3, 1)
            assert [row.day for row in report.by_day] == [
                report.since + timedelta(days=i) for i in range(7)
            ]
            assert report.by_day[-1].calls == 4 and report.by_day[0].calls == 0
            assert {(r.day, r.operation) for r in report.by_day_operation} == {
                (today, "extract"),
                (today, "reflect"),
            }
            if not report.prices.configured:
                assert total.cost_usd is None and report.prices.note
            assert (await memory.usage()).days == 30
            with pytest.raises(InvalidInput):
                await memory.usage(days=0)

    asyncio.run(scenario())


def test_fact_history(url: str, operator: str) -> None:
    """A later note contradicting an earlier one closes the earlier fact (the offline
    rules judge): each fact's history shows the other in its chain and the contradiction."""
    with client(url, operator, "client_fact_history") as memory:
        memory.commit(
            unique("Dana lives in Berlin and works at Atlas Labs."), force=True, wait=True
        )
        memory.commit(
            unique("Dana moved to Lisbon and works at Orion Labs."), force=True, wait=True
        )
        found = memory.contradictions().items
        assert found, "the offline rules found no contradiction to follow"
        contradiction = found[0]
        older, newer = contradiction.older.id, contradiction.newer.id

        history = memory.fact_history(older)
        assert (history.fact.id, history.fact.text) == (older, contradiction.older.text)
        assert (history.fact.status, history.fact.superseded_by) == ("superseded", newer)
        steps = {link.step: link for link in history.chain}
        assert (steps[0].id, steps[1].id) == (older, newer)
        assert [link.step for link in history.chain] == sorted(steps)  # oldest first
        assert steps[0].superseded_by == newer and steps[0].recorded_at.tzinfo is not None
        assert history.truncated is False
        link = next(c for c in history.contradictions if c.id == contradiction.id)
        assert (link.older_id, link.newer_id, link.role) == (older, newer, "older")
        assert link.created_at.tzinfo is not None

        later = memory.fact_history(newer)
        assert {link.step: link.id for link in later.chain}[-1] == older
        assert next(c for c in later.contradictions if c.id == contradiction.id).role == "newer"
        with pytest.raises(NotFound):
            memory.fact_history(str(uuid.uuid4()))


# ------------------------------------------------------------------ async


def test_async_client(url: str, operator: str) -> None:
    async def scenario() -> None:
        async with AsyncElephant(url, api_key=operator, tenant="client_async") as memory:
            assert (await memory.health()).status in ("ok", "degraded")
            texts = [
                unique(f"Async note {i}: the Orion rover uses wheel set {i}.") for i in range(3)
            ]
            results = await asyncio.gather(*(memory.commit(t, force=True) for t in texts))
            assert {r.status for r in results} == {"stored"}
            found = await memory.search("Orion rover wheel set", limit=10, consistency="primary")
            assert {t for t in texts} <= {hit.text for hit in found.results}
            reply = await memory.reflect("Which wheel set does the Orion rover use?")
            assert reply.sources
            seen = [m.id async for m in memory.iter_memories(page_size=2)]
            assert sorted(seen) == sorted(str(r.memory_id) for r in results)
            with pytest.raises(InvalidInput) as bad:
                await memory.commit("")
            assert bad.value.status == 422 and bad.value.details.get("fields")

    asyncio.run(scenario())


# ------------------------------------------------------------------ keys and tenants


def test_keys_and_tenant_isolation(url: str, operator: str) -> None:
    with client(url, operator, "iso_a") as admin_a:
        key_a = admin_a.create_key(tenant="iso_a", scopes=["read", "write"], name="bot a")
        assert key_a.key.startswith("ek_") and key_a.tenant == "iso_a"
        key_b = admin_a.create_key(tenant="iso_b", scopes=["read", "write"], name="bot b")
        reader_a = admin_a.create_key(tenant="iso_a", scopes=["read"], name="reader a")

    with client(url, key_a.key) as a, client(url, key_b.key) as b:
        secret = a.commit(unique("The iso_a vault code is 7-4-1-9."), force=True)
        assert secret.memory_id is not None
        assert a.get_memory(secret.memory_id).id == secret.memory_id
        with pytest.raises(NotFound):  # B's key sees its own tenant, where the id is not
            b.get_memory(secret.memory_id)
        assert all("7-4-1-9" not in hit.text for hit in b.search("vault code").results)
        assert [m.id for m in b.iter_memories()] == []

    with client(url, key_b.key, tenant="iso_a") as b_as_a, pytest.raises(Forbidden) as denied:
        b_as_a.get_memory(secret.memory_id)
    assert denied.value.status == 403 and denied.value.code == "forbidden"

    with client(url, reader_a.key) as reader, pytest.raises(Forbidden):
        reader.commit("a reader cannot write this")
    with Elephant(url, api_key="") as nobody, pytest.raises(Unauthorized) as anonymous:
        nobody.search("vault")
    assert anonymous.value.status == 401
    with client(url, "ek_000000000000_" + "x" * 43) as forged, pytest.raises(Unauthorized):
        forged.search("vault")

    with client(url, operator, "iso_a") as admin_a:
        prefixes = {k.prefix for k in admin_a.keys().items}
        assert {key_a.prefix, reader_a.prefix} <= prefixes and key_b.prefix not in prefixes
        revoked = admin_a.revoke_key(key_a.prefix)
        assert revoked.revoked_at is not None
        audit = admin_a.audit(limit=50)
        assert any("/keys" in entry.action for entry in audit.items)
    with client(url, key_a.key) as a, pytest.raises(Unauthorized):
        a.search("vault")


def test_environment_configures_the_client(
    url: str, operator: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ELEPHANT_URL", url + "/")
    monkeypatch.setenv("ELEPHANT_API_KEY", operator)
    with Elephant(tenant="client_env") as memory:
        assert memory.base_url == url
        assert memory.stats().tenant == "client_env"
    monkeypatch.delenv("ELEPHANT_URL")
    assert Elephant().base_url == "http://127.0.0.1:7777"


def test_the_package_stands_alone() -> None:
    """The client imports no part of the server (it must work installed with httpx only)."""
    code = (
        "import json, sys\n"
        "before = set(sys.modules)\n"
        "import elephant_client\n"
        "loaded = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        "print(json.dumps(sorted(loaded - set(sys.stdlib_module_names))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    third_party = set(json.loads(done.stdout))
    httpx_and_its_own = {"httpx", "httpcore", "anyio", "idna", "certifi", "h11", "sniffio"}
    httpx_and_its_own |= {"click", "rich", "pygments"}  # httpx's CLI, imported when installed
    httpx_and_its_own |= {"zstandard", "brotli", "brotlicffi"}  # its decoders, when installed
    assert third_party - {"elephant_client"} <= httpx_and_its_own, third_party
    sources = "".join(p.read_text() for p in (ROOT / "client" / "elephant_client").glob("*.py"))
    assert not re.search(r"^\s*(from|import) app\b", sources, re.MULTILINE)


def client_routes() -> set[tuple[str, str]]:
    """(method, path) of every request the client makes, read from its source; path
    parameters as ``{}``."""
    source = (ROOT / "client" / "elephant_client" / "_async.py").read_text()
    routes = set(re.findall(r'Call\(\s*"([A-Z]+)",\s*f?"(/[^"]*)"', source))
    routes |= {("POST", path) for path in re.findall(r'_graph_\w+\(\s*"(/[^"]*)"', source)}
    return {(method, re.sub(r"\{[^}]*\}", "{}", path)) for method, path in routes}


def test_the_client_covers_every_endpoint(settings: Settings, elephant: Runtime) -> None:
    """A route added to the API without a client method fails here."""
    schema = create_app(settings, elephant).openapi_schema.to_schema()
    served_routes = {
        (method.upper(), re.sub(r"\{[^}]*\}", "{}", path))
        for path, operations in schema["paths"].items()
        for method in operations
        if method in ("get", "post", "put", "patch", "delete")
    }
    covered_otherwise = {("GET", "/search")}  # search() posts: every option, no URL limit
    assert served_routes - covered_otherwise - client_routes() == set()
    assert client_routes() - served_routes == set(), "the client calls routes the API lacks"


def test_the_sync_client_is_generated_from_the_async_one() -> None:
    assert (ROOT / "client" / "elephant_client" / "_sync.py").read_text() == _unasync.generate(), (
        "client/elephant_client/_sync.py is stale: run python -m elephant_client._unasync"
    )


# ------------------------------------------------------------------ retries (scripted server)


Reply = tuple[int, dict[str, str], Any]  # status, headers, JSON body


@dataclass
class Script:
    """What a scripted server answers, one response per request; the last one repeats."""

    responses: list[Reply]
    requests: list[tuple[str, str]] = field(default_factory=list)


@contextlib.contextmanager
def scripted(script: Script) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 (http.server in a thread) answering ``script``."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            self.rfile.read(length)
            index = min(len(script.requests), len(script.responses) - 1)
            script.requests.append((self.command, self.path))
            status, headers, payload = script.responses[index]
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


UNAVAILABLE: Reply = (
    503,
    {"Retry-After": "0"},
    {"error": "database_unavailable", "message": "down"},
)
OWNER: Reply = (200, {}, {"owner": "me", "source": "settings"})
STATS = {
    "tenant": "t",
    "memories": {"total": 1, "by_kind": {}, "by_source": {}, "text_bytes": 3},
    "facts": {"total": 0, "by_status": {}, "by_source": {}, "text_bytes": 0},
    "conversations": 0,
    "turns": 0,
    "contradictions": 0,
    "jobs": {},
    "keyword_engine": "bm25",
    "future_field": {"ignored": True},
}


def test_503_with_retry_after_is_retried_then_succeeds() -> None:
    script = Script([UNAVAILABLE, UNAVAILABLE, (200, {}, STATS)])
    with scripted(script) as base, Elephant(base, retry=RetryPolicy(attempts=3)) as memory:
        started = time.monotonic()
        stats = memory.stats()
        elapsed = time.monotonic() - started
    assert stats.memories.total == 1 and stats.keyword_engine == "bm25"
    assert script.requests == [("GET", "/stats")] * 3
    assert elapsed < 5, f"Retry-After: 0 should not wait ({elapsed:.1f} s)"


def test_async_503_is_retried_too() -> None:
    script = Script([UNAVAILABLE, UNAVAILABLE, OWNER])

    async def scenario(base: str) -> str:
        async with AsyncElephant(base, retry=FAST) as memory:
            return (await memory.owner()).owner

    with scripted(script) as base:
        assert asyncio.run(scenario(base)) == "me"
    assert len(script.requests) == 3


def test_retries_are_bounded() -> None:
    script = Script([UNAVAILABLE])
    with (
        scripted(script) as base,
        Elephant(base, retry=FAST) as memory,
        pytest.raises(Unavailable) as failed,
    ):
        memory.owner()
    assert len(script.requests) == 3
    assert (failed.value.status, failed.value.code, failed.value.retry_after) == (
        503,
        "database_unavailable",
        0.0,
    )
    script = Script([UNAVAILABLE])
    with (
        scripted(script) as base,
        Elephant(base, retry=NO_RETRY) as memory,
        pytest.raises(Unavailable),
    ):
        memory.owner()
    assert len(script.requests) == 1


def test_a_non_idempotent_post_is_not_retried_on_503_but_commit_is() -> None:
    commit = {
        "memory_id": "m1",
        "status": "duplicate",
        "duplicate_of": "m1",
        "gate": {
            "decision": "duplicate",
            "relevance": None,
            "novelty": None,
            "specificity": None,
            "composite": None,
            "threshold": 5.0,
            "reason": "exact duplicate (same content hash)",
            "scorer": "heuristic",
        },
        "job_id": None,
        "job_status": None,
        "facts": None,
    }
    script = Script([UNAVAILABLE, (200, {}, commit)])
    with scripted(script) as base, Elephant(base, retry=FAST) as memory:
        assert memory.commit("hello").memory_id == "m1"
    assert script.requests == [("POST", "/commit")] * 2

    script = Script([UNAVAILABLE])
    with scripted(script) as base, Elephant(base, retry=FAST) as memory:
        for call in (
            lambda: memory.feedback(memory_id="m1", helpful=True),
            lambda: memory.commit_conversation([{"speaker": "a", "text": "b"}]),
        ):
            with pytest.raises(Unavailable):
                call()
    assert script.requests == [("POST", "/feedback"), ("POST", "/commit_conversation")]


def test_429_is_retried_for_every_call_and_a_long_wait_is_raised() -> None:
    limited = (429, {"Retry-After": "0"}, {"error": "rate_limited", "message": "slow down"})
    feedback = {"memory_id": "m1", "fact_id": None, "delta": 1.0, "importance": 51.0}
    script = Script([limited, (200, {}, feedback)])
    with scripted(script) as base, Elephant(base, retry=FAST) as memory:
        assert memory.feedback(memory_id="m1", helpful=True).importance == 51.0
    assert len(script.requests) == 2

    script = Script([(429, {"Retry-After": "3600"}, {"error": "rate_limited", "message": "no"})])
    with (
        scripted(script) as base,
        Elephant(base, retry=FAST) as memory,
        pytest.raises(RateLimited) as limited_error,
    ):
        memory.owner()
    assert limited_error.value.retry_after == 3600 and len(script.requests) == 1


def test_errors_without_the_error_shape_and_unreachable_servers() -> None:
    script = Script([(502, {}, "bad gateway")])
    with (
        scripted(script) as base,
        Elephant(base, retry=FAST) as memory,
        pytest.raises(ElephantError) as failed,
    ):
        memory.owner()
    assert failed.value.status == 502 and failed.value.code == "http_502"

    port = free_port()  # nobody listens there: refused at once, retried, then raised
    with (
        Elephant(f"http://127.0.0.1:{port}", retry=FAST, timeout=5) as memory,
        pytest.raises(ConnectionFailed) as refused,
    ):
        memory.health()
    assert refused.value.status is None


# ------------------------------------------------------------------ paging


def test_iterators_walk_every_page(url: str, operator: str, db: Database) -> None:
    """Every list endpoint pages by cursor: a small page size walks the same rows, in the
    same order, as one big page."""
    tenant = "client_paging"
    with client(url, operator, tenant) as memory:
        stored = [
            memory.commit(
                unique(f"Paging note {i}: Omar keeps shelf {i} for box {i * 7}."),
                force=True,
                wait=True,
            )
            for i in range(7)
        ]
        ids = {r.memory_id for r in stored}
        first = memory.memories(limit=3)
        assert len(first.items) == 3 and first.next_cursor is not None
        second = memory.memories(limit=3, cursor=first.next_cursor)
        assert not {m.id for m in first.items} & {m.id for m in second.items}
        walked = [m.id for m in memory.iter_memories(page_size=3)]
        assert len(walked) == len(set(walked)) == 7 and set(walked) == ids
        assert [m.id for m in memory.memories(limit=200).items] == walked  # newest first
        with pytest.raises(InvalidInput) as tampered:
            memory.memories(cursor="not-a-cursor")
        assert tampered.value.details["fields"][0]["key"] == "cursor"

        facts = [f.id for f in memory.iter_facts(page_size=2)]
        assert len(facts) >= 3, "the offline extractor stored too few facts to page"
        assert facts == [f.id for f in memory.facts(limit=200).items]

        with db.tenant(tenant) as conn:
            for older, newer in itertools.pairwise(facts):
                conn.execute(
                    "INSERT INTO contradictions (tenant_id, older_fact_id, newer_fact_id, "
                    "detector, score, reason) VALUES (%s, %s, %s, 'test', 0.9, 'planted') "
                    "ON CONFLICT DO NOTHING",
                    (tenant, older, newer),
                )
        contradictions = [c.id for c in memory.iter_contradictions(page_size=2)]
        assert len(contradictions) >= len(facts) - 1
        assert contradictions == [c.id for c in memory.contradictions(limit=200).items]

        jobs = [j.id for j in memory.iter_jobs(page_size=2)]
        assert len(jobs) >= 7 and len(set(jobs)) == len(jobs)
        assert jobs == [j.id for j in memory.jobs(limit=200).items]

        memory.graph_create_entities(
            [{"name": f"Shelf {i}", "entity_type": "place"} for i in range(7)]
        )
        names = [e.name for e in memory.iter_graph_entities(page_size=3)]
        assert names == [e.name for e in memory.graph_entities(limit=200).items]
        assert {f"Shelf {i}" for i in range(7)} <= set(names)

        for i in range(5):
            memory.create_key(tenant=tenant, scopes=["read"], name=f"pager {i}")
        prefixes = [k.prefix for k in memory.iter_keys(page_size=2)]
        assert len(prefixes) == len(set(prefixes)) >= 5
        assert prefixes == [k.prefix for k in memory.keys(limit=200).items]

        before = {e.id for e in memory.audit(limit=200).items}  # itself audited: newer
        entries = [(e.at, e.id) for e in memory.iter_audit(page_size=3)]
        assert len(before) >= 5 and before <= {row_id for _, row_id in entries}
        assert entries == sorted(set(entries), reverse=True), "audit: newest first, no repeat"


# ------------------------------------------------------------------ README quick start


def readme_quick_start(page: str = "README.md") -> str:
    """The Python block of a page's Quick start section, as a reader copies it."""
    text = (ROOT / page).read_text()
    section = text.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 1, f"the Quick start section of {page} should hold one python block"
    return str(blocks[0])


def test_the_docs_quick_start_is_the_readmes() -> None:
    """docs/getting-started.md repeats the README's Quick start: the one run below."""
    assert readme_quick_start("docs/getting-started.md") == readme_quick_start()


def test_readme_quick_start_runs_as_written(
    settings: Settings,
    db: Database,
    embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`make serve` is keyless on loopback: the snippet runs unchanged against such a server
    (ELEPHANT_URL says where it listens)."""
    local = make_settings(
        settings.data_dir,
        embedded={"database": settings.embedded.database},
        auth={"mode": "local"},
        tenant={"default": "readme"},
    )
    code = readme_quick_start()
    assert "Elephant()" in code
    with served(local, db, embedder) as base:
        monkeypatch.setenv("ELEPHANT_URL", base)
        monkeypatch.delenv("ELEPHANT_API_KEY", raising=False)
        exec(compile(code, "README.md#quick-start", "exec"), {"__name__": "readme"})  # noqa: S102
    out = capsys.readouterr().out
    assert "April 14" in out, out
    assert out.count("fuel leak") >= 2, out  # a search hit, and reflect's cited source


def test_analysts_through_the_client(url: str, operator: str) -> None:
    with client(url, operator, "client_analysts") as admin:
        admin.commit(unique("Analysts need a tenant that exists."), force=True)
        created = admin.create_analyst("client_ana", tenants=["client_analysts"])
        assert created.password and created.tenants == ["client_analysts"]
        assert "password" not in created.connection
        try:
            assert "client_ana" in [a.name for a in admin.analysts()]
            with pytest.raises(Conflict):
                admin.create_analyst("client_ana", tenants=["client_analysts"])
        finally:
            revoked = admin.revoke_analyst("client_ana")
        assert revoked.role == created.role
        assert "client_ana" not in [a.name for a in admin.analysts()]
