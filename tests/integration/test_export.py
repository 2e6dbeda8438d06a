"""Export and import of a tenant on the real database: a round trip reproduces every row,
the graph and the search results; bad files are refused before anything is written."""

from __future__ import annotations

import gzip
import json
import os
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from litestar.testing import TestClient
from psycopg import sql

from app.cli import main
from app.config import Settings
from app.db import Database
from app.db.tenant_indexes import keep
from app.errors import Conflict, InvalidInput, NotFound
from app.providers.embedder import Embedder
from app.services.graph.age import graph_name
from app.services.graph.backend import Backend
from app.services.lifecycle import maintenance, sweep
from app.services.retrieval.schemas import SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant
from app.services.transfer import catalog, fileformat
from app.services.transfer.export import export_to_path
from app.services.transfer.importer import import_tenant
from tests.conftest import MANAGED, api_client, make_settings
from tests.graph_backends import with_backend
from tests.transfer_support import Normalised, difference, normalise

Client = TestClient  # type: ignore[type-arg]

SOURCE = "exp-a"
QUERIES = (
    "Who finished the harbour survey?",
    "How much does the boat cost per day?",
    "Where does Ines live?",
    "What does Reefwatch do?",
    "When does the marina open?",
    "tea or coffee",
)
HARBOUR = [
    ("Omar", "Did you finish the harbour survey report yesterday?"),
    ("Ines", "Yes, I finished the harbour survey and sent it to Dana."),
    ("Omar", "Great, I will book the boat for the Tuesday dive."),
    ("Dana", "The reef near Faro is recovering well after the storm."),
    ("Omar", "The boat costs 300 euros per day in the summer."),
    ("Dana", "I will bring the underwater camera and two spare batteries."),
    ("Omar", "Lena checked the weather forecast for Tuesday morning."),
    ("Dana", "The marina opens at seven on weekdays."),
    ("Omar", "Lena booked a table at the harbour restaurant for Friday."),
]
REEF_GRAPH = {
    "entities": [
        {"name": "Ines Duarte", "entity_type": "person", "observations": ["Prefers tea"]},
        {
            "name": "Reefwatch",
            "entity_type": "organization",
            "observations": ["Hired Ines in 2020", "Runs coral surveys in the Algarve"],
        },
        {"name": "Faro", "entity_type": "place"},
    ],
    "relations": [
        {"source": "Ines Duarte", "relation_type": "works_at", "target": "Reefwatch"},
        {"source": "Ines Duarte", "relation_type": "lives_in", "target": "Faro"},
        {"source": "Reefwatch", "relation_type": "part_of", "target": "Faro"},
    ],
}
LONG_NOTE = " ".join(
    f"Sentence {n} of the field log says the transect {n} had {n * 3} parrotfish."
    for n in range(60)
)


# ------------------------------------------------------------------ fixtures and helpers


def call(client: Client, method: str, path: str, tenant: str, body: Any = None) -> Any:
    response = client.request(
        method, path, json=body, params={"wait": "true"}, headers={"X-Elephant-Tenant": tenant}
    )
    assert response.status_code < 300, response.text
    return response.json()


@pytest.fixture(scope="module")
def client(settings: Settings, elephant: Elephant) -> Iterator[Client]:
    with api_client(settings, elephant) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def planted(client: Client, elephant: Elephant) -> str:
    """Every kind of row a tenant can hold: notes (one long: passages), a conversation
    (turns, windows, passages), extracted facts, a contradiction, feedback, the graph
    (entities, relations, observations), a handoff, gate decisions, a tenant owner and
    threshold, jobs, LLM usage."""
    tenant = SOURCE
    call(client, "PUT", "/tenant/owner", tenant, {"owner": "Ines"})
    lisbon = call(client, "POST", "/commit", tenant, {"text": "Ines lives in Lisbon",
                                                      "occurred_at": "2021-03-01"})  # fmt: skip
    call(client, "POST", "/commit", tenant,
         {"text": "Ines moved to Porto", "occurred_at": "2024-06-01", "force": True})  # fmt: skip
    call(client, "POST", "/commit", tenant, {"text": LONG_NOTE, "source": "log"})
    call(client, "POST", "/feedback", tenant, {"memory_id": lisbon["memory_id"], "helpful": True})
    turns = [{"speaker": s, "text": t, "id": f"H{n}"} for n, (s, t) in enumerate(HARBOUR)]
    body = {"turns": turns, "session_date": "2023-05-08", "conversation_id": "harbour-1",
            "source": "chat"}  # fmt: skip
    call(client, "POST", "/commit_conversation", tenant, body)
    call(client, "POST", "/graph/record", tenant, REEF_GRAPH)
    closed = {"source": "Ines Duarte", "relation_type": "lives_in", "target": "Faro"}
    call(client, "POST", "/graph/relations/invalidate", tenant, {"relations": [closed]})
    transcript = (
        "Ines: We decided to publish the reef data in May.\n"
        "Dana: Should Ines present it at the conference?\n"
        "Omar: Next I will clean the dataset."
    )
    session = {"project": "reef-survey", "transcript": transcript, "session_date": "2023-06-01"}
    call(client, "POST", "/sessions/close", tenant, session)
    call(client, "PUT", "/amac/threshold", tenant, {"threshold": 3.5})
    with elephant.db.tenant(tenant) as conn:
        facts = conn.execute(
            "SELECT id FROM facts WHERE observation_kind IS NULL ORDER BY created_at LIMIT 2"
        ).fetchall()
        assert len(facts) == 2, "the offline extractor stored no facts"
        conn.execute(
            "INSERT INTO contradictions (tenant_id, older_fact_id, newer_fact_id, detector, "
            "score, reason) VALUES (%s, %s, %s, 'test', 0.9, 'planted') ON CONFLICT DO NOTHING",
            (tenant, facts[0][0], facts[1][0]),
        )
        conn.execute(
            "INSERT INTO jobs (tenant_id, kind, payload, status) VALUES (%s, 'extract_facts', "
            "%s, 'failed')",
            (tenant, json.dumps({"memory_id": lisbon["memory_id"], "subject": "Ines"})),
        )
    return tenant


def second_runtime(
    pg_data_dir: Path, new_database: Callable[..., str], embedder: Embedder, hint: str,
    backend: Backend | None = None,
) -> Elephant:  # fmt: skip
    sections: dict[str, Any] = {"embedded": {"database": new_database(hint)}}
    if backend is not None:
        sections["graph"] = {"backend": backend}
    settings = make_settings(pg_data_dir, **sections)
    db = Database(settings)
    db.open()
    return Elephant(settings=settings, db=db, embedder=embedder, llm=None)


def rows(elephant: Elephant, tenant: str, *, vectors: bool = True) -> dict[str, list[str]]:
    """Every exported table's rows as sorted JSON texts, without what an import renumbers
    (row numbers and the references to them) and, unless ``vectors``, without vectors."""
    found: dict[str, list[str]] = {}
    with elephant.db.tenant(tenant) as conn:
        tables = catalog.read(conn)
        for table in tables.tables.values():
            if table.needs_vectors and not vectors:
                continue
            dropped = ["tenant_id"] + [
                c.name
                for c in table.columns
                if c.identity or (c.vector and not vectors)
                or any(r.column == c.name and tables.tables[r.table].identity is not None
                       for r in table.references)
            ]  # fmt: skip
            found[table.name] = sorted(
                str(row[0])
                for row in conn.execute(
                    sql.SQL("SELECT (to_jsonb(t) - %s::text[])::text FROM {} AS t").format(
                        sql.Identifier(table.name)
                    ),
                    (dropped,),
                ).fetchall()
            )
        tenant_row = conn.execute(
            "SELECT settings, name FROM tenants WHERE id = %s", (tenant,)
        ).fetchone()
    found["tenants"] = [json.dumps(tenant_row, default=str)]
    return found


def tsvector(elephant: Elephant) -> Elephant:
    """The runtime with the tsvector keyword lane, whose scores come from each row alone.

    The BM25 lane (pg_textsearch) scores by database-wide statistics that count every
    row version the index has seen until it is rebuilt, and a connection keeps the ones
    it read: a long-lived source and its fresh copy score keywords a little apart until
    both are rebuilt. The copy's rows are the same; the same-database test below
    compares with BM25."""
    search_settings = elephant.settings.search.model_copy(update={"keyword_engine": "tsvector"})
    settings = elephant.settings.model_copy(update={"search": search_settings})
    return Elephant(settings=settings, db=elephant.db, embedder=elephant.embedder, llm=None)


def graph_of(elephant: Elephant, tenant: str) -> tuple[list[Any], list[Any]]:
    store = elephant.graph
    assert store is not None
    with elephant.db.tenant(tenant) as conn:
        page, _total = store.page(conn, tenant, 0, 1000)
        keys = [e.key for e in page]
        relations = store.relations(conn, tenant, keys, active_only=False)
    entities = sorted((e.key, e.name, e.role, e.domain, e.epistemic) for e in page)
    triples = sorted((r.source, r.relation_type, r.target, r.active) for r in relations)
    return entities, triples


Hit = tuple[str, str, float, Any]


def results(elephant: Elephant, tenant: str) -> list[list[Hit]]:
    """Each query's hits: kind, text, score, and (for a failure message) how it was scored."""
    found = []
    for query in QUERIES:
        request = SearchRequest(query=query, limit=10, explain=True)
        hits = search(elephant, tenant, request, record_access=False).hits
        found.append([(h.kind, h.text, h.score, (h.rrf, h.prior, h.ranks)) for h in hits])
    return found


def same_results(left: list[list[Hit]], right: list[list[Hit]]) -> None:
    """Same hits in the same order, scores within 1e-6. Hits of equal score are compared
    as a set: search leaves exact ties in the order its scans meet them (so does the
    source from one run to the next), and a tie at the limit may bring in either."""
    for query, a, b in zip(QUERIES, left, right, strict=True):
        shown = (query, _brief(a), _brief(b))
        assert len(a) == len(b), shown
        for hit_a, hit_b in zip(a, b, strict=True):
            assert abs(hit_a[2] - hit_b[2]) <= 1e-6, shown
        assert _ranked(a) == _ranked(b), shown


def _ranked(hits: list[Hit]) -> list[tuple[float, str, str]]:
    """(score, kind, text), ties in text order, without the tie at the cut."""
    last = round(hits[-1][2], 6) if hits else None
    kept = [(round(score, 6), kind, text) for kind, text, score, _ in hits]
    return sorted((h for h in kept if h[0] != last), key=lambda h: (-h[0], h[1], h[2]))


def _brief(hits: list[Hit]) -> list[str]:
    return [f"{kind} {text[:40]!r} {score:.6f} {scored}" for kind, text, score, scored in hits]


def lines(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:  # type: ignore[operator]
        return [json.loads(line) for line in handle]


def write_lines(path: Path, values: list[Any]) -> None:
    """JSON lines; a str is written as it is (a damaged line)."""
    text = "".join((v if isinstance(v, str) else json.dumps(v)) + "\n" for v in values)
    path.write_text(text, encoding="utf-8")


# ------------------------------------------------------------------ round trips


@pytest.mark.parametrize("vectors", [True, False], ids=["vectors", "no-vectors"])
def test_round_trip_into_a_fresh_database_reproduces_rows_graph_and_search(
    planted: str,
    elephant: Elephant,
    tmp_path: Path,
    pg_data_dir: Path,
    new_database: Callable[..., str],
    embedder: Embedder,
    vectors: bool,
) -> None:
    path = tmp_path / "a.jsonl.gz"
    exported = export_to_path(elephant, planted, path, vectors=vectors)
    assert path.exists() and exported.bytes == path.stat().st_size
    header = lines(path)[0]
    assert header["format"] == "elephant-export" and header["version"] == 1
    assert header["embedding"] == {"model": "all-MiniLM-L6-v2", "dim": 384}
    assert header["counts"]["memories"] == exported.counts["memories"] >= 4
    assert ("passages" in header["sections"]) is vectors
    other = second_runtime(pg_data_dir, new_database, embedder, f"export_fresh_{vectors}")
    try:
        report = import_tenant(other, path)  # into the tenant it came from, ids kept
        assert report.tenant == planted and not report.new_ids
        assert (report.vectors == "from the file") is vectors
        if not vectors:
            assert report.embedded["memories"] == exported.counts["memories"]
            assert report.embedded["passages"] > 0
        assert rows(other, planted, vectors=vectors) == rows(elephant, planted, vectors=vectors)
        if vectors:  # vectors came through exactly (pgvector's text is exact)
            assert rows(other, planted) == rows(elephant, planted)
        assert graph_of(other, planted) == graph_of(elephant, planted)
        assert graph_of(other, planted)[1], "the planted relations are missing"
        same_results(results(tsvector(other), planted), results(tsvector(elephant), planted))
        with other.db.admin_connection() as conn:
            audit = conn.execute(
                "SELECT detail ->> 'new_ids' FROM audit_log WHERE action = 'import' "
                "AND tenant_id = %s",
                (planted,),
            ).fetchall()
        assert audit == [("false",)], "the import is not in the audit log"
    finally:
        other.close()


def test_new_ids_into_another_tenant_of_the_same_database(
    planted: str, elephant: Elephant, tmp_path: Path
) -> None:
    path = tmp_path / "a.jsonl"
    export_to_path(elephant, planted, path)
    with pytest.raises(Conflict, match="--new-ids"):
        import_tenant(elephant, path, "exp-same-ids")
    assert rows(elephant, "exp-same-ids")["memories"] == []
    report = import_tenant(elephant, path, "exp-b", new_ids=True)
    assert report.new_ids and report.source_tenant == planted
    with elephant.db.tenant(planted) as conn:
        old = {
            str(r[0]) for r in conn.execute("SELECT id FROM memories UNION SELECT id FROM facts")
        }
    with elephant.db.tenant("exp-b") as conn:
        new = {
            str(r[0]) for r in conn.execute("SELECT id FROM memories UNION SELECT id FROM facts")
        }
        payload = conn.execute(
            "SELECT payload ->> 'memory_id' FROM jobs WHERE status = 'failed'"
        ).fetchone()
        dangling = conn.execute(
            "SELECT count(*) FROM facts AS f WHERE f.memory_id IS NOT NULL "
            "AND NOT EXISTS (SELECT 1 FROM memories AS m WHERE m.id = f.memory_id)"
        ).fetchone()
    assert len(new) == len(old) and not new & old
    assert payload is not None and payload[0] in new, "a job payload kept the old memory id"
    assert dangling == (0,)
    assert {k: len(v) for k, v in rows(elephant, "exp-b").items()} == {
        k: len(v) for k, v in rows(elephant, planted).items()
    }
    assert graph_of(elephant, "exp-b") == graph_of(elephant, planted)


def test_import_refuses_a_tenant_that_is_not_empty(
    planted: str, elephant: Elephant, tmp_path: Path
) -> None:
    path = tmp_path / "a.jsonl"
    export_to_path(elephant, planted, path)
    before = rows(elephant, planted)
    with pytest.raises(Conflict, match="not empty"):
        import_tenant(elephant, path, planted, new_ids=True)
    assert rows(elephant, planted) == before


@pytest.mark.skipif(MANAGED, reason="needs Apache AGE for the other backend")
def test_graph_moves_between_backends(planted: str, elephant: Elephant, tmp_path: Path) -> None:
    """Exported from one backend, imported where the other is in use."""
    path = tmp_path / "a.jsonl"
    export_to_path(elephant, planted, path)
    assert elephant.graph is not None
    other: Backend = "relational" if elephant.graph.backend == "age" else "age"
    there = with_backend(elephant, other)
    report = import_tenant(there, path, "exp-other-backend", new_ids=True)
    assert report.graph_entities == len(graph_of(elephant, planted)[0])
    assert graph_of(there, "exp-other-backend") == graph_of(elephant, planted)


# ------------------------------------------------------------------ bad input


@pytest.fixture(scope="module")
def good(planted: str, elephant: Elephant, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("export") / "good.jsonl"
    export_to_path(elephant, planted, path, vectors=False)
    return path


def _corrupt_line(values: list[Any]) -> list[Any]:
    return [*values[:3], '{"table": "memories", "row": {"text": "cut', *values[3:]]


def _bad_version(values: list[Any]) -> list[Any]:
    return [{**values[0], "version": 99}, *values[1:]]


def _wrong_table(values: list[Any]) -> list[Any]:
    return [values[0], {"table": "pg_authid", "row": {}}, *values[1:]]


def _other_tenant(values: list[Any]) -> list[Any]:
    row = next(i for i, v in enumerate(values) if v.get("table") == "memories")
    return [*values[:row], {"table": "memories", "row": {**values[row]["row"],
            "tenant_id": "someone-else"}}, *values[row + 1:]]  # fmt: skip


def _cut_off(values: list[Any]) -> list[Any]:
    return values[: len(values) // 2]


def _unknown_column(values: list[Any]) -> list[Any]:
    values = [*values]
    row = next(i for i, v in enumerate(values) if v.get("table") == "facts")
    values[row] = {"table": "facts", "row": {**values[row]["row"], "mood": "happy"}}
    return values


def _bad_vector(values: list[Any]) -> list[Any]:
    values = [{**values[0], "vectors": True}, *values[1:]]
    row = next(i for i, v in enumerate(values) if v.get("table") == "memories")
    values[row] = {"table": "memories", "row": {**values[row]["row"], "embedding": "[1,2]"}}
    return values


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_corrupt_line, "line 4 is not valid JSON"),
        (_bad_version, "format version 99 is unknown"),
        (_wrong_table, "unknown table 'pg_authid'"),
        (_other_tenant, "belongs to tenant 'someone-else'"),
        (_cut_off, "without its end line"),
        (_unknown_column, "mood"),
        (_bad_vector, "do not fit this database"),
    ],
    ids=["corrupt-line", "version", "table", "tenant", "cut-off", "column", "vector"],
)
def test_bad_files_are_refused_and_nothing_is_written(
    good: Path, elephant: Elephant, tmp_path: Path, damage: Any, message: str
) -> None:
    values = lines(good)
    path = tmp_path / "bad.jsonl"
    write_lines(path, damage(values))
    tenant = f"exp-bad-{damage.__name__.strip('_').replace('_', '-')}"
    with pytest.raises(InvalidInput, match=message):
        import_tenant(elephant, path, tenant, new_ids=True)
    assert all(not found for name, found in rows(elephant, tenant).items() if name != "tenants")


def left_behind(elephant: Elephant, tenant: str) -> dict[str, int]:
    """Whatever the database holds of a tenant, read as the migrator (which creates nothing
    and sees every row): its row, its graph (the registry row, AGE's catalogue entry and
    schema) and its rows in every table with a tenant_id, jobs and maintenance_runs
    included. Empty: nothing."""
    graph = graph_name(tenant)
    found: dict[str, int] = {}
    with elephant.db.admin_connection() as conn:

        def count(statement: sql.Composable | str, value: str) -> int:
            row = conn.execute(statement, (value,)).fetchone()
            return int(row[0]) if row else 0

        found["tenants"] = count("SELECT count(*) FROM tenants WHERE id = %s", tenant)
        tables = conn.execute(
            "SELECT c.table_name FROM information_schema.columns AS c JOIN "
            "information_schema.tables AS t USING (table_schema, table_name) WHERE "
            "c.column_name = 'tenant_id' AND c.table_schema = 'public' "
            "AND t.table_type = 'BASE TABLE'"
        ).fetchall()
        assert {"graphs", "jobs", "maintenance_runs", "memories"} <= {r[0] for r in tables}
        for (table,) in tables:
            found[table] = count(
                sql.SQL("SELECT count(*) FROM {} WHERE tenant_id = %s").format(
                    sql.Identifier(table)
                ),
                tenant,
            )
        found["graph schema"] = count("SELECT count(*) FROM pg_namespace WHERE nspname = %s", graph)
        if conn.execute("SELECT to_regclass('ag_catalog.ag_graph')").fetchone() != (None,):
            found["ag_catalog.ag_graph"] = count(
                "SELECT count(*) FROM ag_catalog.ag_graph WHERE name = %s", graph
            )
    return {name: n for name, n in found.items() if n}


def test_an_import_refused_for_an_id_clash_leaves_nothing_and_can_be_retried(
    planted: str,
    elephant: Elephant,
    tmp_path: Path,
    pg_data_dir: Path,
    new_database: Callable[..., str],
    embedder: Embedder,
) -> None:
    """All or nothing: the graph the file needs is made in the import's transaction, so a
    refusal leaves no tenant row or graph for the maintenance scheduler to take up, and
    the same tenant takes the corrected import."""
    path = tmp_path / "a.jsonl"
    export_to_path(elephant, planted, path)
    other = second_runtime(pg_data_dir, new_database, embedder, "export_clash")
    try:
        import_tenant(other, path)  # the tenant it came from, ids kept
        with pytest.raises(Conflict, match="Nothing was imported"):
            import_tenant(other, path, "exp-clash")  # the same ids again
        assert left_behind(other, "exp-clash") == {}
        assert "exp-clash" not in maintenance.tenants(other)
        maintenance.enqueue_due(other)
        assert left_behind(other, "exp-clash") == {}
        report = import_tenant(other, path, "exp-clash", new_ids=True)
        assert report.tenant == "exp-clash" and report.graph_entities > 0
        assert graph_of(other, "exp-clash") == graph_of(elephant, planted)
        assert left_behind(other, "exp-clash")["memories"] == report.rows["memories"]
    finally:
        other.close()


@pytest.fixture(scope="module")
def full(planted: str, elephant: Elephant, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An export with its vectors: an import of it embeds nothing."""
    path = tmp_path_factory.mktemp("export") / "full.jsonl"
    export_to_path(elephant, planted, path)
    return path


def _row_where(values: list[Any], table: str, **matching: Any) -> int:
    return next(
        i
        for i, v in enumerate(values)
        if v.get("table") == table and all(v["row"].get(k) == w for k, w in matching.items())
    )


def _changed(table: str, change: dict[str, Any], **matching: Any) -> Callable[..., list[Any]]:
    def damage(values: list[Any]) -> list[Any]:
        values = [*values]
        at = _row_where(values, table, **matching)
        values[at] = {"table": table, "row": {**values[at]["row"], **change}}
        return values

    return damage


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_changed("memories", {"text": "x" * 32_001}, kind="note"),
         "a row of memories: text is 32001 characters; the limit is 32000"),
        (_changed("turns", {"text": "y" * 32_001}),
         "a row of turns: text is 32001 characters; the limit is 32000"),
        (_changed("turns", {"speaker": "S" * 201}),
         "a row of turns: speaker: String should have at most 200 characters"),
        (_changed("memories", {"text": 12345}, kind="note"),
         "a row of memories: text: Input should be a valid string"),
        (_changed("memories", {"importance": 1000}, kind="note"),
         "a row of memories: importance: Input should be less than or equal to 100"),
        (_changed("conversations", {"source": "s" * 101}),
         "a row of conversations: source: String should have at most 100 characters"),
        (_changed("turns", {"seq": -1}), "do not fit this database: .* check constraint"),
    ],
    ids=["long-note", "long-turn", "long-speaker", "number-for-text", "importance", "source",
         "check-constraint"],
)  # fmt: skip
def test_an_import_is_held_to_the_api_input_rules_and_leaves_nothing(
    full: Path, elephant: Elephant, tmp_path: Path, damage: Any, message: str, request: Any
) -> None:
    """A file is input like a request: what /commit refuses is refused (before anything is
    written), and the corrected file then imports into the same tenant."""
    path = tmp_path / "bad.jsonl"
    write_lines(path, damage(lines(full)))
    tenant = f"exp-rules-{request.node.callspec.id}"
    with pytest.raises(InvalidInput, match=message):
        import_tenant(elephant, path, tenant, new_ids=True)
    assert left_behind(elephant, tenant) == {}
    report = import_tenant(elephant, full, tenant, new_ids=True)
    assert report.rows["memories"] == lines(full)[0]["counts"]["memories"]


def test_export_of_an_unknown_tenant_is_not_found(elephant: Elephant, tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="no tenant 'nobody-here'"):
        export_to_path(elephant, "nobody-here", tmp_path / "x.jsonl")
    assert not list(tmp_path.iterdir()), "a failed export left a file behind"


def test_catalog_knows_every_tenant_table(elephant: Elephant) -> None:
    """A new tenant table is exported (after the known ones) unless listed as skipped."""
    with elephant.db.tenant(SOURCE) as conn:
        tables = catalog.read(conn)
        every = {
            str(r[0])
            for r in conn.execute(
                "SELECT table_name FROM information_schema.columns "
                "WHERE column_name = 'tenant_id' AND table_schema = 'public'"
            )
        }
    assert set(tables.tables) | catalog.SKIPPED >= every - {"graph_entities", "graph_relations",
                                                             "current_facts",
                                                             "entity_mentions"}  # fmt: skip
    order = tables.order
    for table in tables.tables.values():
        for ref in table.references:
            if ref.table in tables.tables and ref.table != table.name:
                assert order.index(ref.table) < order.index(table.name), (table.name, ref)


# ------------------------------------------------------------------ the commands


def test_cli_export_and_import(
    planted: str, settings: Settings, elephant: Elephant, tmp_path: Path
) -> None:
    env = {
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
    }
    if MANAGED:
        env["ELEPHANT_DATABASE_OPTIONAL_EXTENSIONS"] = os.environ.get(
            "ELEPHANT_DATABASE_OPTIONAL_EXTENSIONS", "none"
        )
    runner = CliRunner()
    path = tmp_path / "cli.jsonl"
    result = runner.invoke(main, ["export", "--tenant", planted, "--out", str(path)], env=env)
    assert result.exit_code == 0, result.output
    assert lines(path)[0]["tenant"] == planted
    result = runner.invoke(main, ["import", str(path), "--tenant", "exp-cli", "--new-ids"],
                           env=env)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tenant"] == "exp-cli"
    again = runner.invoke(main, ["import", str(path), "--tenant", "exp-cli", "--new-ids"], env=env)
    assert again.exit_code == 1 and "not empty" in again.output
    stdout = runner.invoke(main, ["export", "--tenant", planted, "--no-vectors"], env=env)
    assert stdout.exit_code == 0, stdout.output
    first = json.loads(stdout.stdout.splitlines()[0])
    assert first["vectors"] is False and first["tenant"] == planted
    assert first["format"] == fileformat.FORMAT


# ------------------------------------------------------------------ issue 39: serving state


def _way(elephant: Elephant, tenant: str) -> tuple[Any, ...] | None:
    with elephant.db.admin_connection() as conn:
        return conn.execute(
            "SELECT way, vector_rows FROM tenant_vector_ways WHERE tenant_id = %s", (tenant,)
        ).fetchone()


def _with_section(values: list[Any], section: str, rows: list[dict[str, Any]]) -> list[Any]:
    """The file with rows of ``section`` added before the graph (as an export of the
    release that exported serving state wrote them), header and end line to match."""
    header, body, end = values[0], values[1:-1], values[-1]
    at = next((i for i, v in enumerate(body) if str(v["table"]).startswith("graph.")), len(body))
    sections = [s for s in header["sections"] if not s.startswith("graph.")]
    sections += [section] + [s for s in header["sections"] if s.startswith("graph.")]
    header = {**header, "sections": sections, "counts": {**header["counts"], section: len(rows)}}
    added = [{"table": section, "row": row} for row in rows]
    counts = {**end["end"]["counts"], section: len(rows)}
    end = {"end": {"lines": len(values) + len(rows), "counts": counts}}
    return [header, *body[:at], *added, *body[at:], end]


def test_a_tenant_with_a_recorded_vector_way_exports_and_imports(
    planted: str,
    elephant: Elephant,
    tmp_path: Path,
    pg_data_dir: Path,
    new_database: Callable[..., str],
    embedder: Embedder,
) -> None:
    """Issue 39, reproduction 1: once the keeper recorded the tenant's vector way, its
    export imported into nothing (permission denied for table tenant_vector_ways). The
    way is how this server serves the tenant, not data: it is left out of the file,
    skipped in a file of the release that carried it, and recorded for the imported
    tenant as the keeper records it."""
    keep(elephant.db.admin_connection, elephant.settings.search.tenant_index_rows, build=False)
    recorded = _way(elephant, planted)
    assert recorded is not None and recorded[0] == "exact" and recorded[1] > 0
    path = tmp_path / "a.jsonl"
    export_to_path(elephant, planted, path)
    assert not {"tenant_vector_ways", "maintenance_runs"} & set(lines(path)[0]["sections"])
    older = tmp_path / "older.jsonl"  # as the release before wrote it, the way's row in it
    way_row = {"way": "own", "vector_rows": 7, "counted_at": "2026-01-01T00:00:00+00:00",
               "indexed_at": None, "build_seconds": 1.5}  # fmt: skip
    run_row = {"id": 3, "kind": "decay", "job_id": 99, "triggered_by": "schedule",
               "started_at": "2026-01-01T00:00:00+00:00", "report": {}}  # fmt: skip
    values = _with_section(lines(path), "maintenance_runs", [run_row])
    write_lines(older, _with_section(values, "tenant_vector_ways", [way_row]))
    report = import_tenant(elephant, older, "exp-way-new-ids", new_ids=True)
    assert "tenant_vector_ways" not in report.rows and "maintenance_runs" not in report.rows
    assert _way(elephant, "exp-way-new-ids") == recorded
    with elephant.db.tenant("exp-way-new-ids") as conn:
        assert conn.execute("SELECT count(*) FROM maintenance_runs").fetchone() == (0,)
    other = second_runtime(pg_data_dir, new_database, embedder, "export_way")
    try:
        import_tenant(other, older)  # same ids, into an empty database
        assert _way(other, planted) == recorded
        assert rows(other, planted) == rows(elephant, planted)
    finally:
        other.close()


# ------------------------------------------------------------------ issue 39: references

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def fresh_ids(values: list[Any]) -> list[Any]:
    """The file with every uuid replaced by a new one, consistently (a file of the same
    tenant exported from another database: its ids are used nowhere here)."""
    mapping: dict[str, str] = {}

    def new(match: re.Match[str]) -> str:
        return mapping.setdefault(match.group(0), str(uuid.uuid4()))

    return [json.loads(UUID.sub(new, json.dumps(v))) for v in values]


@pytest.fixture(scope="module")
def used(
    planted: str, client: Client, elephant: Elephant, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """An export of the planted tenant after searches recorded the use of its rows."""
    call(client, "POST", "/search", planted, {"query": "Where does Ines live?"})
    elephant.access.flush()
    path = tmp_path_factory.mktemp("export") / "used.jsonl"
    export_to_path(elephant, planted, path)
    assert {"access_stats", "admission_log", "feedback", "jobs"} <= set(lines(path)[0]["sections"])
    return path


@pytest.fixture(scope="module")
def elsewhere(client: Client, elephant: Elephant) -> dict[str, str]:
    """Ids of another tenant's rows, which an import must not point at."""
    tenant = "exp-elsewhere"
    call(client, "POST", "/commit", tenant, {"text": "Tomas keeps bees in Evora"})
    turns = [{"speaker": "Tomas", "text": "The hives swarmed in May."}]
    call(client, "POST", "/commit_conversation", tenant, {"turns": turns})
    with elephant.db.tenant(tenant) as conn:
        memory, conversation = conn.execute(
            "SELECT id::text, conversation_id::text FROM memories WHERE kind = 'window'"
        ).fetchone()  # type: ignore[misc]
        fact = conn.execute("SELECT id::text FROM facts LIMIT 1").fetchone()
        turn = conn.execute("SELECT id FROM turns LIMIT 1").fetchone()
    assert fact is not None and turn is not None
    return {"memory": memory, "conversation": conversation, "fact": fact[0], "turn": turn[0]}


def _pointing(table: str, column: str, target: str, **matching: Any) -> Any:
    """A fresh-id file with one reference of ``table`` set to another tenant's row."""

    def damage(values: list[Any], there: dict[str, str]) -> tuple[list[Any], int, Any]:
        values = fresh_ids(values)
        at = _row_where(values, table, **matching)
        value: Any = there[target]
        row = values[at]["row"]
        if column.startswith("payload."):
            value = {**row["payload"], column.split(".", 1)[1]: there[target]}
            values[at] = {"table": table, "row": {**row, "payload": value}}
            return values, at + 1, there[target]
        extra = {"superseded_at": "2026-01-01T00:00:00+00:00"} if column == "superseded_by" else {}
        values[at] = {"table": table, "row": {**row, **extra, column: value}}
        return values, at + 1, value

    damage.__name__ = f"{table}.{column}"
    return damage


@pytest.mark.parametrize("new_ids", [False, True], ids=["same-ids", "new-ids"])
@pytest.mark.parametrize(
    "damage",
    [
        _pointing("facts", "memory_id", "memory", observation_kind=None),
        _pointing("facts", "conversation_id", "conversation", observation_kind=None),
        _pointing("memories", "superseded_by", "memory", kind="note"),
        _pointing("passages", "turn_id", "turn"),
        _pointing("feedback", "memory_id", "memory"),
        _pointing("contradictions", "older_fact_id", "fact"),
        _pointing("admission_log", "conversation_id", "conversation"),
        _pointing("access_stats", "item_id", "memory", item_kind="memory"),
    ],
    ids=lambda d: d.__name__,
)
def test_an_import_refuses_a_reference_to_another_tenant(
    used: Path, elephant: Elephant, elsewhere: dict[str, str], tmp_path: Path, damage: Any,
    new_ids: bool, request: Any,
) -> None:  # fmt: skip
    """Issue 39, reproduction 2: a fresh-id file with one reference set to a row of
    another tenant imported, leaving a row pointing across tenants. Every reference is
    checked against the rows of the file (the target tenant is empty), with or without
    new ids: a 422 naming the table, the column, the line and the value, nothing written."""
    values, line, value = damage(lines(used), elsewhere)
    path = tmp_path / "dangling.jsonl"
    write_lines(path, values)
    tenant = f"exp-dangle-{abs(hash(request.node.callspec.id)) % 10**8}"
    table, column = damage.__name__.split(".", 1)
    with pytest.raises(InvalidInput) as refused:
        import_tenant(elephant, path, tenant, new_ids=new_ids)
    message = refused.value.message
    assert f"line {line}" in message and str(value) in message, message
    assert f"{table}.{column.split('.')[0]}" in message, message
    assert left_behind(elephant, tenant) == {}


# ------------------------------------------------------------------ issue 39: round trip

EVERY_KIND = {
    "tenants", "conversations", "turns", "memories", "passages", "facts", "fact_entities",
    "admission_log", "access_stats", "handoffs", "llm_usage", "contradictions", "feedback",
    "jobs", fileformat.GRAPH_ENTITIES, fileformat.GRAPH_RELATIONS,
}  # fmt: skip


@pytest.fixture(scope="module")
def every_kind(planted: str, client: Client, elephant: Elephant) -> str:
    """The planted tenant with what it lacks of every kind of row a tenant owns: store
    items with history (a key put twice, another put and deleted), LLM usage, the use
    its searches recorded, and a note merged into its near-duplicate by the maintenance
    sweep (whose done extraction job still names it)."""
    tenant = planted
    kayak = [
        call(client, "POST", "/commit", tenant, {"text": text, "force": True})["memory_id"]
        for text in ("Ines keeps a red kayak at the marina", "Ines keeps a red kayak in the marina")
    ]
    for value in ({"theme": "dark", "font": "serif"}, {"theme": "light", "font": "serif"}):
        item = {"namespace": ["users", "ines"], "key": "prefs", "value": value}
        call(client, "PUT", "/store/items", tenant, item)
    item = {"namespace": ["users", "ines"], "key": "draft", "value": {"note": "Dive plan B"}}
    call(client, "PUT", "/store/items", tenant, item)
    deleted = client.delete(
        "/store/items",
        params={"namespace": "users.ines", "key": "draft"},
        headers={"X-Elephant-Tenant": tenant},
    )
    assert deleted.status_code == 200, deleted.text
    for query in QUERIES:
        call(client, "POST", "/search", tenant, {"query": query})
    elephant.access.flush()
    with elephant.db.tenant(tenant) as conn:
        conn.execute(
            "INSERT INTO llm_usage (tenant_id, operation, provider, model, tokens_in, "
            "tokens_out, latency_ms, attempts, ok) VALUES (%s, 'extract_facts', 'scripted', "
            "'test', 120, 30, 12.5, 1, true)",
            (tenant,),
        )
        sweep.merge(conn, tenant, keep=kayak[0], gone=kayak[1])
        stale = conn.execute(
            "SELECT count(*) FROM jobs WHERE payload ->> 'memory_id' = %s", (kayak[1],)
        ).fetchone()
    assert stale == (1,), "the merged note's extraction job is gone: nothing stale to export"
    return tenant


def normalised_export(elephant: Elephant, tenant: str, path: Path) -> Normalised:
    export_to_path(elephant, tenant, path)
    with elephant.db.tenant(tenant) as conn:
        tables = catalog.read(conn)
    return normalise(lines(path), tables)


def labelled_results(elephant: Elephant, tenant: str, file: Normalised) -> list[list[Any]]:
    """Each query's hits as (score, kind, the label of its id), exact ties in label order
    (search leaves them in the order its scans meet them, and a copy's ids are others),
    the tie at the cut left out (either row may come in)."""
    found = []
    for query in QUERIES:
        hits = search(tsvector(elephant), tenant, SearchRequest(query=query, limit=10),
                      record_access=False).hits  # fmt: skip
        last = round(hits[-1].score, 6) if hits else None
        kept = [(round(h.score, 6), h.kind, file.label(h.id)) for h in hits]
        found.append(sorted((h for h in kept if h[0] != last), key=lambda h: (-h[0], h[2])))
    return found


@pytest.mark.parametrize("mode", ["empty-database", "new-ids"])
def test_export_import_export_gives_the_same_file_and_the_same_search(
    every_kind: str,
    elephant: Elephant,
    tmp_path: Path,
    pg_data_dir: Path,
    new_database: Callable[..., str],
    embedder: Embedder,
    mode: str,
) -> None:
    """Issue 39: export and import are exact inverses, for every kind of row a tenant
    owns: the copy's export equals the original's row by row up to ids and times (into
    an empty database with the same ids, or beside other tenants with new ones), and
    search gives the same hits (ids mapped) with the same scores."""
    first = normalised_export(elephant, every_kind, tmp_path / "first.jsonl")
    sections = {s for s, n in first.lines[0]["counts"].items() if n}
    assert sections >= EVERY_KIND, EVERY_KIND - sections
    history = [
        line["row"]
        for line in first.lines[1:-1]
        if line["table"] == "memories" and line["row"]["item_key"] == "prefs"
    ]
    assert len(history) == 2 and sum(1 for r in history if r["superseded_by"]) == 1
    if mode == "empty-database":
        there = second_runtime(pg_data_dir, new_database, embedder, "export_round_trip")
        tenant = every_kind
        import_tenant(there, tmp_path / "first.jsonl")
    else:
        there, tenant = elephant, "exp-round-trip"
        import_tenant(elephant, tmp_path / "first.jsonl", tenant, new_ids=True)
    try:
        second = normalised_export(there, tenant, tmp_path / "second.jsonl")
        assert len(second.lines) == len(first.lines)
        for number, (a, b) in enumerate(zip(first.lines, second.lines, strict=True), start=1):
            assert a == b, f"line {number}: {difference(a, b)}"
        if mode == "new-ids":  # (row numbers, "<table>:<n>", may meet by chance)
            kept = {k for k in first.labels if ":" not in k} & set(second.labels)
            assert not kept, f"uuids kept: {kept}"
        assert labelled_results(there, tenant, second) == labelled_results(
            elephant, every_kind, first
        )
    finally:
        if there is not elephant:
            there.close()


@pytest.mark.parametrize("new_ids", [False, True], ids=["same-ids", "new-ids"])
def test_a_job_naming_a_row_the_file_does_not_bring_names_nothing(
    used: Path, elephant: Elephant, elsewhere: dict[str, str], tmp_path: Path, new_ids: bool
) -> None:
    """A job's payload is not kept in step with the rows (a note merged away by
    deduplication leaves its extraction job naming it), so an id there that names no row
    of the file is imported as null: it cannot name another tenant's row. An id below the
    payload's top level, which nothing checks or rewrites, is refused."""
    values, line, value = _pointing("jobs", "payload.memory_id", "memory", status="failed")(
        lines(used), elsewhere
    )
    path = tmp_path / "job.jsonl"
    write_lines(path, values)
    tenant = f"exp-job-{new_ids}".lower()
    import_tenant(elephant, path, tenant, new_ids=new_ids)
    with elephant.db.tenant(tenant) as conn:
        payloads = [r[0] for r in conn.execute("SELECT payload FROM jobs WHERE status = 'failed'")]
        kept = conn.execute(
            "SELECT count(*) FROM jobs AS j JOIN memories AS m "
            "ON m.id::text = j.payload ->> 'memory_id'"
        ).fetchone()
    assert payloads == [{"memory_id": None, "subject": "Ines"}], payloads
    assert kept is not None and kept[0] > 0, "the ids of the file's own rows were lost"
    row = values[line - 1]["row"]
    nested = {**row, "payload": {"subject": "Ines", "about": {"memory_id": value}}}
    values[line - 1] = {"table": "jobs", "row": nested}
    write_lines(path, values)
    with pytest.raises(InvalidInput, match=f"line {line}: jobs.payload holds the id {value}"):
        import_tenant(elephant, path, f"{tenant}-nested", new_ids=new_ids)
    assert left_behind(elephant, f"{tenant}-nested") == {}
