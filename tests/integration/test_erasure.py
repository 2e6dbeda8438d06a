"""Erasure and the records endpoints, on the real database: nothing of an erased subject
or tenant may survive in any table of any schema, and nothing of another tenant may go."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from click.testing import CliRunner
from litestar.testing import TestClient
from psycopg import sql

from app.cli import main
from app.config import Settings
from app.db import Database
from app.providers.llm import LLMError
from app.services.access.audit import digest
from app.services.access.erasure import EraseIn, erase, names_pattern
from app.services.access.keys import KeyIn, create_key
from app.services.graph import operations as ops
from app.services.graph import reads
from app.services.graph.age import graph_name
from app.services.graph.models import RecordIn
from app.services.graph.transfer import migrate_graph
from app.services.jobs.runner import drain
from app.services.memory.commit import commit_note
from app.services.memory.schemas import NoteIn
from app.services.runtime import Elephant
from app.services.transfer.export import export_to_path
from app.services.transfer.vault import export_vault
from tests.conftest import api_client, count_rows
from tests.fakes import ScriptedLLM
from tests.graph_backends import with_backend

Client = TestClient  # type: ignore[type-arg]

CANARY = "Qorvath Zentrin"
ALIAS = "Qorvath"
NEEDLE = "%qorvath%"  # the alias alone: a partial leak ("Qorvath" left somewhere) counts too
OTHER = "canary-b"  # holds the same canary; must come through every erasure untouched
REPORTED = (
    "admission_log", "contradictions", "conversations", "fact_entities", "facts", "feedback",
    "handoffs", "jobs", "llm_usage", "memories", "turns",
)  # fmt: skip
TABLES = ("memories", "facts", "turns", "conversations", "admission_log", "jobs", "handoffs")


@pytest.fixture(scope="module")
def client(settings: Settings, elephant: Elephant) -> Iterator[Client]:
    with api_client(settings, elephant) as test_client:
        yield test_client


def call(
    client: Client, method: str, path: str, tenant: str, body: Any = None, **params: Any
) -> Any:
    headers = {"X-Elephant-Tenant": tenant}
    if body is None:
        return client.request(method, path, params=params, headers=headers)
    return client.request(method, path, json=body, params=params, headers=headers)


def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def commit(client: Client, tenant: str, text: str, **extra: Any) -> dict[str, Any]:
    body = ok(call(client, "POST", "/commit", tenant, {"text": text, **extra}, wait="true"), 201)
    assert body["status"] == "stored", body
    return dict(body)


def converse(
    client: Client,
    tenant: str,
    turns: list[tuple[str, str]],
    turn_ids: str | None = None,
    **extra: Any,
) -> Any:
    """A conversation; ``turn_ids`` gives each turn the caller's id '<prefix><n>'."""
    items = [{"speaker": speaker, "text": text} for speaker, text in turns]
    if turn_ids is not None:
        items = [{**item, "id": f"{turn_ids}{n}"} for n, item in enumerate(items)]
    body = {"turns": items, "session_date": "2023-05-08", **extra}
    return ok(call(client, "POST", "/commit_conversation", tenant, body, wait="true"), 201)


def snapshot(db: Database, tenant: str) -> dict[str, int]:
    return {table: count_rows(db, tenant, table) for table in TABLES}


# ------------------------------------------------------------------ the canary


HARBOUR = [
    ("Omar", "Did you finish the harbour survey report yesterday?"),
    (CANARY, "Yes, I finished the harbour survey and sent it to Dana."),
    ("Omar", "Great, I will book the boat for the Tuesday dive."),
    ("Dana", "Qorvath said the reef near Faro is recovering well."),
    ("Omar", "The boat costs 300 euros per day in the summer."),
    ("Dana", "I will bring the underwater camera and two spare batteries."),
    ("Omar", "Lena checked the weather forecast for Tuesday morning."),
    ("Dana", "The marina opens at seven on weekdays."),
    ("Omar", "Lena booked a table at the harbour restaurant for Friday."),
]


REEF_GRAPH = {
    "entities": [
        {"name": CANARY, "entity_type": "person", "observations": ["Prefers tea over coffee"]},
        {
            "name": "Reefwatch",
            "entity_type": "organization",
            "observations": [f"Hired {ALIAS} in 2020", "Runs coral surveys in the Algarve"],
        },
    ],
    "relations": [{"source": CANARY, "relation_type": "works_at", "target": "Reefwatch"}],
}


def plant(client: Client, elephant: Elephant, tenant: str) -> dict[str, Any]:
    """The canary in every kind of row of a tenant; returns ids the tests look at."""
    lisbon = commit(client, tenant, f"{CANARY} lives in Lisbon", occurred_at="2021-03-01")
    commit(client, tenant, f"{CANARY} moved to Porto", occurred_at="2024-06-01", force=True)
    neutral = commit(client, tenant, "Omar keeps the importer tests green every Friday")
    feedback = {"memory_id": lisbon["memory_id"], "helpful": True}
    ok(call(client, "POST", "/feedback", tenant, feedback))
    harbour = converse(
        client, tenant, HARBOUR, turn_ids="H", conversation_id="harbour-1", source="chat"
    )
    ok(call(client, "POST", "/graph/record", tenant, REEF_GRAPH), 201)
    transcript = (
        f"{CANARY}: We decided to publish the reef data in May.\n"
        f"Dana: Should {ALIAS} present it at the conference?\n"
        "Omar: Next I will clean the dataset."
    )
    body = {"project": "reef-survey", "transcript": transcript, "session_date": "2023-06-01"}
    ok(call(client, "POST", "/sessions/close", tenant, body), 201)
    _plant_rejections(client, tenant)
    _plant_llm_failure(elephant, tenant)
    with elephant.db.tenant(tenant) as conn:
        conn.execute(
            "INSERT INTO jobs (tenant_id, kind, payload, status) VALUES (%s, 'embed_memories', "
            "%s, 'done')",
            (tenant, json.dumps({"reason": f"re-embed the notes about {CANARY}"})),
        )
    drain(elephant)
    return {"neutral": neutral["memory_id"], "harbour": harbour["conversation_id"]}


def _plant_rejections(client: Client, tenant: str) -> None:
    """A note and a whole conversation turned away by the gate: only the log keeps them."""
    ok(call(client, "PUT", "/amac/threshold", tenant, {"threshold": 10}))
    note = ok(call(client, "POST", "/commit", tenant, {"text": f"{CANARY} mentioned tides"}))
    assert note["status"] == "rejected", note
    turns = [(CANARY, "Low tide is at noon."), ("Dana", f"Thanks {ALIAS}, noted.")]
    rejected = converse(client, tenant, turns, conversation_id="tides", source="chat")
    assert rejected["windows"]["rejected"] == rejected["windows"]["stored"] + 1
    ok(call(client, "PUT", "/amac/threshold", tenant, {"threshold": None}))


def _plant_llm_failure(elephant: Elephant, tenant: str) -> None:
    """An LLM error that quotes the text: kept in llm_usage and in the gate's scorer note."""
    refusal = LLMError(f"provider refused a text about {CANARY}")
    llm = ScriptedLLM({"GateScores": [refusal]})
    failing = Elephant(
        settings=elephant.settings, db=elephant.db, embedder=elephant.embedder, llm=llm
    )
    note = NoteIn(text=f"{CANARY} keeps a logbook of every dive since 2015 in Sagres")
    assert commit_note(failing, tenant, note).status == "stored"


Scan = dict[str, dict[str | None, list[str]]]


def scan(db: Database, needle: str = NEEDLE) -> Scan:
    """Every table of every schema, as the superuser (no row-level security): the rows whose
    text contains the needle, per table and per owning tenant (None: no tenant column)."""
    found: Scan = {}
    with db.admin_connection() as conn:
        owners = dict(conn.execute("SELECT graph_name, tenant_id FROM graphs").fetchall())
        tables = conn.execute(
            "SELECT n.nspname, c.relname, EXISTS (SELECT 1 FROM pg_attribute AS a "
            "  WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped) "
            "FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace "
            "WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
            "AND n.nspname NOT LIKE 'pg_toast%%' ORDER BY 1, 2"
        ).fetchall()
        for schema, table, has_tenant in tables:
            owner = sql.SQL("t.tenant_id::text" if has_tenant else "NULL::text")
            rows = conn.execute(
                sql.SQL("SELECT {}, t::text FROM {} AS t WHERE t::text ILIKE %s").format(
                    owner, sql.Identifier(schema, table)
                ),
                (needle,),
            ).fetchall()
            for tenant, text in rows:
                tenant = tenant if has_tenant else owners.get(schema)
                found.setdefault(f"{schema}.{table}", {}).setdefault(tenant, []).append(text)
    return found


def of_tenant(found: Scan, tenant: str | None) -> dict[str, list[str]]:
    return {table: sorted(rows[tenant]) for table, rows in found.items() if tenant in rows}


def tenant_rows(db: Database, tenant: str) -> dict[str, int]:
    """Row counts of every tenant table and of the tenant's graph tables."""
    counts = {}
    with db.admin_connection() as conn:
        tables = conn.execute(
            "SELECT c.relname FROM pg_attribute AS a JOIN pg_class AS c ON c.oid = a.attrelid "
            "JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = 'public' "
            "AND c.relkind = 'r' AND a.attname = 'tenant_id'"
        ).fetchall()
        for (table,) in tables:
            row = conn.execute(
                sql.SQL("SELECT count(*) FROM {} WHERE tenant_id = %s").format(
                    sql.Identifier(table)
                ),
                (tenant,),
            ).fetchone()
            counts[table] = row[0] if row else 0
        for label in ("_ag_label_vertex", "_ag_label_edge"):
            table = sql.Identifier(graph_name(tenant), label)
            there = conn.execute("SELECT to_regclass(%s)", (table.as_string(conn),)).fetchone()
            if there is None or there[0] is None:
                continue  # no AGE graph (the relational backend keeps it in kg_* tables)
            row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(table)).fetchone()
            counts[label] = row[0] if row else 0
    return counts


def graph_tables(elephant: Elephant, tenant: str) -> str:
    """Where the tenant's graph rows are, as scan() names tables: its AGE graph's schema,
    or the relational backend's entity table."""
    store = elephant.graph
    assert store is not None
    return f"{graph_name(tenant)}." if store.backend == "age" else "public.kg_entities"


@pytest.fixture(scope="module")
def other(client: Client, elephant: Elephant) -> Scan:
    """Tenant B with the same canary, planted once; its canary rows as first seen."""
    plant(client, elephant, OTHER)
    before = scan(elephant.db)
    assert of_tenant(before, OTHER), "the canary was not planted in tenant B"
    return before


def assert_gone(found: Scan, tenant: str) -> None:
    survived = {table: rows[:2] for table, rows in of_tenant(found, tenant).items()}
    assert not survived, f"canary of {tenant} survived in: {json.dumps(survived, indent=1)}"
    unowned = {table: rows[None][:2] for table, rows in found.items() if None in rows}
    assert not unowned, f"canary survived in a table without tenant: {unowned}"


def test_subject_erasure_leaves_no_canary_anywhere(
    client: Client, elephant: Elephant, other: Scan, tmp_path: Path
) -> None:
    tenant = "canary-a"
    ids = plant(client, elephant, tenant)
    planted = of_tenant(scan(elephant.db), tenant)
    for table in (
        "public.turns",
        "public.memories",
        "public.facts",
        "public.admission_log",
        "public.handoffs",
        "public.llm_usage",
        "public.jobs",
        "public.fact_entities",
    ):
        assert table in planted, f"the canary was not planted in {table}"
    assert any(table.startswith(graph_tables(elephant, tenant)) for table in planted)
    b_rows = tenant_rows(elephant.db, OTHER)

    body = {"subject": CANARY, "aliases": [ALIAS]}
    report = ok(call(client, "POST", "/erase", tenant, body))

    found = scan(elephant.db)
    assert_gone(found, tenant)
    assert of_tenant(found, OTHER) == of_tenant(other, OTHER)
    assert tenant_rows(elephant.db, OTHER) == b_rows
    assert report["dry_run"] is False and report["target"]["kind"] == "subject"
    for table in REPORTED:
        assert report["removed"][table] >= 1, f"nothing removed from {table}"
    assert report["graph"]["vertices"] >= 1 and report["graph"]["edges"] >= 1
    assert (
        report["total"]
        == sum(report["removed"].values())
        + report["graph"]["vertices"]
        + (report["graph"]["edges"])
    )
    with elephant.db.admin_connection() as conn:
        logged = conn.execute(
            "SELECT target, detail ->> 'total' FROM audit_log WHERE tenant_id = %s "
            "AND action = 'erase'",
            (tenant,),
        ).fetchall()
    assert logged == [(f"subject {digest(CANARY)}", str(report["total"]))]
    _check_what_stays(client, elephant, tenant, ids)
    # What a tenant takes away: its export (vectors too) and its Markdown vault.
    exported = tmp_path / "after.jsonl"
    export_to_path(elephant, tenant, exported)
    vault = tmp_path / "vault"
    export_vault(elephant, tenant, vault)
    files = [exported, *(f for f in vault.rglob("*") if f.is_file())]
    assert len(files) > 2 and any("Reefwatch" in f.read_text() for f in files)
    leaked = [
        str(f.relative_to(tmp_path)) for f in files if _mentions_canary(f.read_text() + f.name)
    ]
    assert leaked == [], f"the erased subject survived in {leaked}"


def _mentions_canary(text: str) -> bool:
    lowered = text.lower()
    return CANARY.lower() in lowered or ALIAS.lower() in lowered


def _check_what_stays(client: Client, elephant: Elephant, tenant: str, ids: dict[str, Any]) -> None:
    """Other people's words, facts, windows and entities stay."""
    with elephant.db.tenant(tenant) as conn:
        turns = conn.execute(
            "SELECT speaker, text FROM turns WHERE conversation_id = %s ORDER BY seq",
            (ids["harbour"],),
        ).fetchall()
        windows = conn.execute(
            "SELECT turn_start, turn_end FROM memories WHERE conversation_id = %s",
            (ids["harbour"],),
        ).fetchall()
        orphan = conn.execute(
            "SELECT count(*) FROM facts WHERE text LIKE '%%300 euros%%' AND memory_id IS NULL"
        ).fetchone()
        neutral = conn.execute("SELECT 1 FROM memories WHERE id = %s", (ids["neutral"],))
        assert neutral.fetchone() is not None
    assert [speaker for speaker, _ in turns] == [
        "Omar",
        "Omar",
        "Omar",
        "Dana",
        "Omar",
        "Dana",
        "Omar",
    ]
    assert windows == [(4, 8)]
    assert orphan == (1,), "a fact of Omar's turn (H4) in a removed window stays with its turn"
    graph = ok(call(client, "POST", "/graph/open", tenant, {"names": ["Reefwatch", CANARY]}))
    assert graph["missing"] == [CANARY]
    (reefwatch,) = graph["entities"]
    assert [o["content"] for o in reefwatch["observations"]] == [
        "Runs coral surveys in the Algarve"
    ]
    assert reefwatch["relations"] == []


def test_tenant_erasure_leaves_nothing_and_the_tenant_starts_again(
    client: Client, elephant: Elephant, other: Scan
) -> None:
    tenant = "canary-c"
    plant(client, elephant, tenant)
    key = create_key(elephant.db, KeyIn(tenant=tenant, scopes=["read"], name="to go")).key
    assert of_tenant(scan(elephant.db), tenant)
    b_rows = tenant_rows(elephant.db, OTHER)

    dry = ok(call(client, "POST", "/erase", tenant, {"tenant": True, "dry_run": True}))
    assert of_tenant(scan(elephant.db), tenant), "a dry run removed something"
    report = ok(call(client, "POST", "/erase", tenant, {"tenant": True}))
    assert {**dry, "dry_run": False} == report

    found = scan(elephant.db)
    assert_gone(found, tenant)
    assert of_tenant(found, OTHER) == of_tenant(other, OTHER)
    assert tenant_rows(elephant.db, OTHER) == b_rows
    assert report["removed"]["tenants"] == 1 and report["removed"]["api_keys"] == 1
    age = elephant.graph is not None and elephant.graph.backend == "age"
    assert report["removed"]["graphs"] == (1 if age else 0)
    assert "kg_entities" not in report["removed"], "graph rows are reported as vertices"
    assert report["graph"]["schema_dropped"] is age and report["graph"]["vertices"] >= 3
    with elephant.db.admin_connection() as conn:
        graph = conn.execute(
            "SELECT 1 FROM graphs WHERE tenant_id = %s UNION ALL "
            "SELECT 1 FROM kg_entities WHERE tenant_id = %s",
            (tenant, tenant),
        ).fetchone()
        audit = conn.execute(
            "SELECT target, detail FROM audit_log WHERE tenant_id = %s AND action = 'erase'",
            (tenant,),
        ).fetchall()
    assert graph is None
    assert [row[0] for row in audit] == ["tenant", "tenant"]
    assert [row[1]["dry_run"] for row in audit] == [True, False]
    refused = client.get("/memories", headers={"Authorization": f"Bearer {key}"})
    assert refused.status_code == 401, "the tenant's API keys go with it"

    # The tenant starts again from nothing: writes, the graph, reads.
    commit(client, tenant, "Nadia repaired the compressor on 4 March 2025")
    ok(call(client, "POST", "/graph/record", tenant, {"entities": [{"name": "Compressor"}]}), 201)
    page = ok(call(client, "GET", "/memories", tenant))
    assert page["total"] == 1 and "Nadia" in page["items"][0]["text"]
    entities = ok(call(client, "GET", "/graph/entities", tenant))
    assert [e["name"] for e in entities["entities"]] == ["Compressor", "Nadia"]  # Nadia: ingest


# ------------------------------------------------------------------ dry run and targets


def test_dry_run_reports_what_the_real_run_removes_and_removes_nothing(
    client: Client, elephant: Elephant
) -> None:
    tenant = "dry"
    commit(client, tenant, "Ilse Brandt adopted a grey cat named Pixel in 2022")
    turns = [
        ("Ilse Brandt", "I start at the observatory on Monday."),
        ("Tom", "Good luck with the telescope, Ilse Brandt!"),
    ]
    converse(client, tenant, turns)
    before = snapshot(elephant.db, tenant)
    body = {"subject": "Ilse Brandt", "dry_run": True}
    dry = ok(call(client, "POST", "/erase", tenant, body))
    assert snapshot(elephant.db, tenant) == before
    assert dry["dry_run"] is True and dry["total"] > 0
    real = ok(call(client, "POST", "/erase", tenant, {**body, "dry_run": False}))
    assert real == {**dry, "dry_run": False}
    after = snapshot(elephant.db, tenant)
    assert after["memories"] == before["memories"] - real["removed"]["memories"]
    assert after["facts"] == before["facts"] - real["removed"]["facts"]
    again = ok(call(client, "POST", "/erase", tenant, body))
    assert again["total"] == 0


def test_erase_by_conversation(client: Client, elephant: Elephant) -> None:
    tenant = "by-conv"
    first = converse(client, tenant, HARBOUR[:5], conversation_id="c1")["conversation_id"]
    converse(client, tenant, HARBOUR[4:], conversation_id="c2")
    note = commit(client, tenant, "Lena's passport expires on 3 April 2027")
    ok(call(client, "PUT", "/amac/threshold", tenant, {"threshold": 10}))
    rejected = converse(client, tenant, HARBOUR[:3], conversation_id="c3")
    ok(call(client, "PUT", "/amac/threshold", tenant, {"threshold": None}))
    with elephant.db.tenant(tenant) as conn:
        c3_log = conn.execute(
            "SELECT count(*) FROM admission_log WHERE kind = 'window' AND memory_id IS NULL"
        ).fetchone()
    assert c3_log is not None and c3_log[0] == len(rejected["windows"]["items"]) >= 1
    before = snapshot(elephant.db, tenant)
    c2 = ok(call(client, "GET", "/memories", tenant, conversation="c2"))
    assert c2["total"] >= 1
    assert {item["conversation_external_id"] for item in c2["items"]} == {"c2"}

    report = ok(call(client, "POST", "/erase", tenant, {"conversation_id": "c1"}))
    assert report["removed"]["conversations"] == 1 and report["removed"]["turns"] == 5
    assert report["removed"]["facts"] >= 1 and report["removed"]["jobs"] >= 1
    by_uuid = ok(
        call(client, "POST", "/erase", tenant, {"conversation_id": rejected["conversation_id"]})
    )
    assert by_uuid["removed"]["admission_log"] == c3_log[0], "its rejected windows' log rows"
    assert by_uuid["removed"]["turns"] == 3
    missing = ok(call(client, "POST", "/erase", tenant, {"conversation_id": "nope"}))
    assert missing["total"] == 0 and missing["target"]["missing"] == ["nope"]

    with elephant.db.tenant(tenant) as conn:
        left = conn.execute("SELECT external_id FROM conversations ORDER BY 1").fetchall()
        stray = conn.execute(
            "SELECT (SELECT count(*) FROM turns WHERE conversation_id = %(c)s) + "
            "(SELECT count(*) FROM memories WHERE conversation_id = %(c)s) + "
            "(SELECT count(*) FROM facts WHERE conversation_id = %(c)s) + "
            "(SELECT count(*) FROM jobs WHERE payload ->> 'conversation_id' = %(c)s::text)",
            {"c": first},
        ).fetchone()
        kept = conn.execute("SELECT count(*) FROM memories WHERE id = %s", (note["memory_id"],))
        assert kept.fetchone() == (1,)
    assert left == [("c2",)] and stray == (0,)
    after = snapshot(elephant.db, tenant)
    assert after["turns"] == before["turns"] - 8


def test_erase_by_source(client: Client, elephant: Elephant) -> None:
    tenant = "by-source"
    imported = commit(client, tenant, "Piotr sold his sailboat in Gdansk in 2021", source="import")
    converse(client, tenant, HARBOUR[:4], source="import")
    chat = commit(client, tenant, "Piotr bought a bicycle in Krakow in 2023", source="chat")
    report = ok(call(client, "POST", "/erase", tenant, {"source": "import"}))
    assert report["removed"]["memories"] >= 2 and report["removed"]["conversations"] == 1
    with elephant.db.tenant(tenant) as conn:
        sources = conn.execute(
            "SELECT 'memories', source FROM memories UNION SELECT 'facts', source FROM facts "
            "UNION SELECT 'admission_log', source FROM admission_log "
            "UNION SELECT 'conversations', source FROM conversations ORDER BY 1"
        ).fetchall()
        jobs = conn.execute(
            "SELECT count(*) FROM jobs WHERE payload ->> 'memory_id' = %s",
            (imported["memory_id"],),
        ).fetchone()
    assert sources == [("admission_log", "chat"), ("facts", "chat"), ("memories", "chat")]
    assert jobs == (0,)
    assert ok(call(client, "GET", f"/memories/{chat['memory_id']}", tenant))["facts"] >= 1


def test_erase_by_ids(client: Client, elephant: Elephant) -> None:
    tenant = "by-ids"
    first = commit(client, tenant, "Rosa planted forty olive trees in Evora in 2020")
    second = commit(client, tenant, "Rosa sold her olive oil at the Lisbon market in 2023")
    ok(
        call(
            client, "POST", "/feedback", tenant, {"memory_id": first["memory_id"], "helpful": True}
        )
    )
    facts = ok(call(client, "GET", "/facts", tenant, memory_id=second["memory_id"]))["items"]
    assert facts and facts[0]["entities"], "facts are linked to their entities"

    body = {"memory_ids": [first["memory_id"]], "fact_ids": [facts[0]["id"]]}
    report = ok(call(client, "POST", "/erase", tenant, body))
    removed = report["removed"]
    assert removed["memories"] == 1 and removed["facts"] >= 2 and removed["feedback"] == 1
    assert removed["admission_log"] == 1 and removed["jobs"] == 1
    assert removed["fact_entities"] >= len(facts[0]["entities"])
    assert report["target"]["missing"] == []
    with elephant.db.tenant(tenant) as conn:
        rows = conn.execute(
            "SELECT (SELECT count(*) FROM facts WHERE memory_id = %(m)s), "
            "(SELECT count(*) FROM fact_entities WHERE fact_id = %(f)s), "
            "(SELECT count(*) FROM memories WHERE id = %(s)s)",
            {"m": first["memory_id"], "f": facts[0]["id"], "s": second["memory_id"]},
        ).fetchone()
    assert rows == (0, 0, 1)
    unknown = str(uuid4())
    missing = ok(call(client, "POST", "/erase", tenant, {"fact_ids": [unknown]}))
    assert missing["total"] == 0 and missing["target"]["missing"] == [unknown]


# ------------------------------------------------------------------ records


def test_records_paging_reading_and_deleting(client: Client, elephant: Elephant) -> None:
    tenant = "records"
    ids = [
        commit(client, tenant, text)["memory_id"]
        for text in (
            "Sven repaired the lighthouse lamp on 2 May 2024",
            "Sven painted the lighthouse door blue in June 2024",
            "Sven ordered a new fog horn from Bergen in July 2024",
        )
    ]
    first = ok(call(client, "GET", "/memories", tenant, limit=2))
    assert first["total"] == 3 and first["next_offset"] == 2
    assert [item["id"] for item in first["items"]] == ids[::-1][:2]
    last = ok(call(client, "GET", "/memories", tenant, limit=2, offset=2))
    assert [item["id"] for item in last["items"]] == [ids[0]] and last["next_offset"] is None
    assert ok(call(client, "GET", "/memories", tenant, kind="window"))["total"] == 0
    memory = ok(call(client, "GET", f"/memories/{ids[0]}", tenant))
    assert memory["kind"] == "note" and memory["facts"] >= 1 and memory["has_embedding"]

    facts = ok(call(client, "GET", "/facts", tenant, status="active", limit=1))
    assert facts["total"] >= 3 and len(facts["items"]) == 1 and facts["next_offset"] == 1
    fact = ok(call(client, "GET", f"/facts/{facts['items'][0]['id']}", tenant))
    assert fact["status"] == "active" and fact["memory_id"] in ids

    unknown = str(uuid4())
    for path in (f"/memories/{unknown}", f"/facts/{unknown}"):
        assert call(client, "GET", path, tenant).status_code == 404
        assert call(client, "DELETE", path, tenant).status_code == 404
    elsewhere = call(client, "GET", f"/memories/{ids[0]}", "records-other")
    assert elsewhere.status_code == 404
    assert elsewhere.json()["message"] == f"no memory with id {ids[0]} in this tenant"
    assert call(client, "DELETE", f"/memories/{ids[0]}", "records-other").status_code == 404

    reader = create_key(elephant.db, KeyIn(tenant=tenant, scopes=["read"])).key
    as_reader = {"Authorization": f"Bearer {reader}"}
    assert client.get(f"/memories/{ids[0]}", headers=as_reader).status_code == 200
    assert client.delete(f"/memories/{ids[0]}", headers=as_reader).status_code == 403
    report = ok(call(client, "DELETE", f"/memories/{ids[0]}", tenant))
    assert report["removed"]["memories"] == 1
    assert report["removed"]["facts"] == memory["facts"] and report["removed"]["jobs"] == 1
    assert call(client, "GET", f"/memories/{ids[0]}", tenant).status_code == 404
    assert ok(call(client, "GET", "/facts", tenant, memory_id=ids[0]))["total"] == 0
    report = ok(call(client, "DELETE", f"/facts/{fact['id']}", tenant))
    assert report["removed"]["facts"] == 1
    for bad in ({"limit": 0}, {"limit": 201}, {"offset": -1}, {"kind": "poem"}):
        assert call(client, "GET", "/memories", tenant, **bad).status_code == 422
    assert call(client, "GET", "/facts", tenant, status="lost").status_code == 422


# ------------------------------------------------------------------ bad input


def test_a_subject_matches_values_not_labels_or_keys(client: Client, elephant: Elephant) -> None:
    """Erasing "Claude" must not take every row scored by claude-haiku, nor "window" every
    window: enumerated columns and JSON keys are never matched."""
    tenant = "labels"
    converse(client, tenant, HARBOUR[:4], source="chat")
    with elephant.db.tenant(tenant) as conn:
        conn.execute(
            "INSERT INTO llm_usage (tenant_id, operation, provider, model, ok) "
            "VALUES (%s, 'gate', 'anthropic', 'claude-haiku-4-5', true)",
            (tenant,),
        )
        conn.execute(
            "INSERT INTO jobs (tenant_id, kind, payload, status) "
            "VALUES (%s, 'embed_memories', '{\"reason\": \"backfill\"}', 'done')",
            (tenant,),
        )
    body = {"subject": "Claude", "aliases": ["window", "accepted", "offline", "reason", "chat"]}
    report = ok(call(client, "POST", "/erase", tenant, {**body, "dry_run": True}))
    assert report["total"] == 0, report


@pytest.mark.parametrize(
    ("names", "text", "named"),
    [
        (["Ada"], "ada's notes", True),
        (["Ada"], "Adam and Adaline", False),
        (["Ada Lovelace"], "met ADA   LOVELACE\tyesterday", True),
        (["Dr. Who"], "Ask Dr. Who.", True),
        (["Dr. Who"], "Ask Drx Who", False),
        (["C++"], "C++ is fast", True),
        (["Zoë"], "zoë said hi", True),
        (["Ada", "Lovelace"], "Lady Lovelace", True),
        (["O'Brien"], '{"name": "O\'Brien"}', True),
    ],
)
def test_names_match_whole_words_in_any_case(
    db: Database, names: list[str], text: str, named: bool
) -> None:
    with db.connection() as conn:
        row = conn.execute("SELECT %s ~* %s", (text, names_pattern(names))).fetchone()
    assert row == (named,)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({}, "name what to erase"),
        ({"tenant": False}, "name what to erase"),
        ({"dry_run": True}, "name what to erase"),
        ({"subject": "Dana", "source": "chat"}, "one kind of target per request"),
        ({"tenant": True, "memory_ids": [str(uuid4())]}, "one kind of target per request"),
        ({"subject": ""}, "subject must not be empty"),
        ({"subject": "   "}, "subject must not be empty"),
        ({"subject": "D"}, "at least 2 characters"),
        ({"subject": "Da\u0000na"}, "NUL"),
        ({"subject": "Dana", "aliases": ["Da\u0000"]}, "NUL"),
        ({"subject": "Dana", "aliases": [""]}, "alias must not be empty"),
        ({"source": "chat\u0000"}, "NUL"),
        ({"conversation_id": ""}, "must not be empty"),
        ({"aliases": ["Dana"], "source": "chat"}, "aliases need a subject"),
        ({"memory_ids": [str(uuid4()) for _ in range(1001)]}, "at most 1000"),
        ({"memory_ids": ["not-a-uuid"]}, "memory_ids"),
        ({"subject": "Dana", "colour": "red"}, "colour"),
    ],
)
def test_bad_erasures_are_422_and_remove_nothing(
    client: Client, elephant: Elephant, body: dict[str, Any], fragment: str
) -> None:
    tenant = "bad-erase"
    if count_rows(elephant.db, tenant, "memories") == 0:
        converse(client, tenant, HARBOUR[:4], source="chat")
    before = snapshot(elephant.db, tenant)
    response = call(client, "POST", "/erase", tenant, body)
    assert response.status_code == 422, response.text
    assert fragment in response.json()["message"]
    assert snapshot(elephant.db, tenant) == before


# ------------------------------------------------------------------ CLI


def test_cli_erase_dry_run_and_confirmation(
    client: Client, settings: Settings, elephant: Elephant
) -> None:
    tenant = "cli-erase"
    commit(client, tenant, "Yara Okafor tuned the church organ on 9 September 2024")
    env = {
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
    }
    runner = CliRunner()
    before = snapshot(elephant.db, tenant)
    args = ["erase", "--tenant", tenant, "--subject", "Yara Okafor", "--alias", "Yara"]
    result = runner.invoke(main, [*args, "--dry-run"], env=env)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["dry_run"] is True and report["removed"]["memories"] == 1
    assert snapshot(elephant.db, tenant) == before
    refused = runner.invoke(main, ["erase", "--tenant", tenant, "--all"], env=env)
    assert refused.exit_code == 1 and "--yes" in refused.output
    two = runner.invoke(main, [*args, "--source", "chat"], env=env)
    assert two.exit_code == 1 and "one kind of target" in two.output
    assert snapshot(elephant.db, tenant) == before


# ------------------------------------------------------------------ the relational graph


def test_erasure_reaches_the_relational_graph_and_a_copy_left_in_age(
    elephant: Elephant, other: Scan
) -> None:
    """On the relational backend a subject's entities and relations go, and so does the
    copy an earlier `elephant graph migrate` left in the other backend."""
    relational = with_backend(elephant, "relational")
    tenant = "canary-rel"
    ops.record(relational, tenant, RecordIn.model_validate(REEF_GRAPH))
    copies = 1
    capabilities = elephant.db.capabilities
    if capabilities is not None and capabilities.age:
        migrate_graph(elephant, "age", tenant)
        copies = 2
    assert of_tenant(scan(elephant.db), tenant)

    report = erase(relational, tenant, EraseIn(subject=CANARY, aliases=[ALIAS]))
    assert (report.graph.vertices, report.graph.edges) == (copies, copies)
    found = scan(elephant.db)
    assert_gone(found, tenant)
    assert of_tenant(found, OTHER) == of_tenant(other, OTHER)
    graph = reads.open_nodes(relational, tenant, ["Reefwatch", CANARY])
    assert graph.missing == [CANARY]
    (reefwatch,) = graph.entities
    assert reefwatch.relations == []
    assert [o.content for o in reefwatch.observations] == ["Runs coral surveys in the Algarve"]

    whole = erase(relational, tenant, EraseIn(tenant=True))
    assert (whole.graph.vertices, whole.graph.edges) == (copies, 0)  # Reefwatch, per backend
    assert "kg_entities" not in whole.removed and "kg_relations" not in whole.removed
    assert whole.total == sum(whole.removed.values()) + whole.graph.vertices
    with elephant.db.admin_connection() as conn:
        left = conn.execute(
            "SELECT (SELECT count(*) FROM kg_entities WHERE tenant_id = %(t)s) "
            "+ (SELECT count(*) FROM kg_relations WHERE tenant_id = %(t)s) "
            "+ (SELECT count(*) FROM graphs WHERE tenant_id = %(t)s)",
            {"t": tenant},
        ).fetchone()
    assert left == (0,)
