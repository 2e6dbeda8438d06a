"""Upgrades keep data: a database made and used by release 0.1.0's own code, upgraded by
today's `elephant migrate`, keeps every row and answers every search as before; the API
serves it with the keys 0.1.0 issued; and the documented rollback (docs/upgrading.md)
gives 0.1.0 back its database.

Decisions (issue 39, item 3):

- The starting point is RELEASE_0_1_0, the last commit of 0.1.0: CHANGELOG.md dates
  0.1.0 2026-12-02 and lists under [Unreleased] everything from issue 28's services
  reorganisation (54b8a8c) onwards (analysts and migration 0015 included), so 0.1.0 is
  the commit before it, whose migration head is 0014_tenant_vectors. It is the oldest
  version this project supports upgrading from (docs/upgrading.md); a later release
  adds its own constant and fixture beside it.
- Its code, not a hand-written imitation of its schema: the commit's tree is extracted
  with ``git archive`` and tests/integration/upgrade_driver.py runs under it (today's
  venv, ``PYTHONPATH`` = that tree): 0.1.0's migrations build the database, and its API
  (TestClient over its create_app) writes through its own write path: notes, a
  conversation, a closed session, graph records, a decision, feedback, a contradiction,
  a rejected and an erased note, API keys. Without the history (a shallow clone) the
  module skips, saying so.
- "Every row": every table of every schema (public, the AGE graphs, ag_catalog), read
  as JSON before and after. A row keeps every column it had, value for value; a column
  the upgrade adds is NULL in old rows (the columns 0015-0016 add have no default).
  Only the bookkeeping of the schema version changes (UNCHANGED_EXCEPT).
- "The same search result": each query of upgrade_driver.QUERIES has one target, the
  row holding a word of the query's (a conversation's overlapping windows may share
  it); 0.1.0 must rank a row holding that word first (else the query proves nothing),
  and today's code, served over HTTP on the upgraded database, must rank the very same
  row first (a fact counts as its memory; for a conversation's turn, a window holding
  that turn: with the tsvector keyword lane today's code picks the other of two
  overlapping windows for one query). Another tenant's word finds nothing, before
  and after. Lower ranks may differ: ranking has changed
  since 0.1.0 on purpose (keyword_first_within, sub-queries), so a whole-list equality
  would test the changelog, not the upgrade. (Today's code on a fresh database fed the
  same data was the other choice: it would compare two write paths, with other ids.)
- Rollback is what docs/upgrading.md documents: today's `elephant migrate --down
  0014_tenant_vectors` with today's API stopped, then 0.1.0's code again (its own start
  re-applies its views). The downgrades drop only what 0015-0016 added, so every row
  stays in 0.1.0's columns, 0.1.0's searches answer as before, and its schema is 0.1.0's
  but for three function comments and the indentation of recreated function bodies
  (COMMENTS_LEFT_AS_TODAYS). A store item deleted after the upgrade is a plain,
  searchable note again for 0.1.0, as the page warns.

Measured on 2 cores shared with other test runs: 116 s at a load average of 5 (the module
fixture: 0.1.0 writing, `elephant migrate --status`, `elephant migrate`, 64 s; the
rollback: `elephant migrate --down`, 0.1.0 searching again, 43 s), 136 s at 6.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from app.config import Settings
from app.db import Database
from app.db.embedded import EmbeddedPostgres
from app.db.migrate import head_revision
from app.providers.embedder import Embedder
from app.services.runtime import Elephant
from tests.conftest import MANAGED, make_settings, serve_in_thread
from tests.integration import upgrade_driver as driver
from tests.integration.test_schema_parity import assert_same_schema, schema_dump

# The last commit of release 0.1.0 (see the module docstring): its migration head.
RELEASE_0_1_0 = "1834ccf8de60c0faf5be3b78ad001d185ef2dd06"
RELEASE_0_1_0_HEAD = "0014_tenant_vectors"
REPOSITORY = Path(__file__).resolve().parents[2]
DRIVER = Path(driver.__file__)
ELEPHANT = str(Path(sys.executable).parent / "elephant")

# Rows the upgrade rewrites on purpose: the schema's own bookkeeping.
UNCHANGED_EXCEPT = {
    "public.alembic_version": "the revision alembic is at",
    "public.elephant_meta": "schema_version and updated_at follow the revision",
}
Dump = dict[str, list[dict[str, Any]]]


# ------------------------------------------------------------------ 0.1.0's code


def release_tree(destination: Path) -> Path:
    """RELEASE_0_1_0's files, as its wheel lays them out (app.migrations, app.sql)."""
    try:
        found = subprocess.run(
            ["git", "-C", str(REPOSITORY), "rev-parse", "--verify", f"{RELEASE_0_1_0}^{{commit}}"],
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:
        pytest.skip("git is not installed: the test extracts release 0.1.0 from the history")
    if found.returncode != 0:
        pytest.skip(
            f"release 0.1.0 ({RELEASE_0_1_0[:7]}) is not in this clone's history "
            "(a shallow clone?): fetch the full history to test upgrades from it"
        )
    archive = destination / "release.tar"
    subprocess.run(
        ["git", "-C", str(REPOSITORY), "archive", "-o", str(archive), RELEASE_0_1_0,
         "app", "migrations", "sql"],
        check=True,
    )  # fmt: skip
    with tarfile.open(archive) as tar:
        tar.extractall(destination, filter="data")
    # Installed, migrations/ and sql/ are the packages app.migrations and app.sql; today's
    # editable install would otherwise answer those names with today's folders.
    (destination / "app" / "migrations").symlink_to("../migrations")
    (destination / "app" / "sql").symlink_to("../sql")
    return destination


def run_release(
    tree: Path, mode: str, settings: Settings, out: Path, **extra: Any
) -> dict[str, Any]:
    """upgrade_driver.py under 0.1.0's code; its report."""
    raw = {
        "data_dir": str(settings.data_dir),
        "embedded": {"database": settings.embedded.database},
        "database": {"optional_extensions": list(settings.database.optional_extensions)},
        **extra,
    }
    env = {name: value for name, value in os.environ.items() if not name.startswith("ELEPHANT_")}
    result = subprocess.run(
        [sys.executable, str(DRIVER), mode, json.dumps(raw), str(out)],
        env={**env, "PYTHONPATH": str(tree)},
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, f"0.1.0's code failed ({mode}):\n{result.stderr[-4000:]}"
    report: dict[str, Any] = json.loads(out.read_text())
    assert report["head"] == RELEASE_0_1_0_HEAD, "the tree is 0.1.0's"
    return report


def elephant_cli(settings: Settings, *args: str) -> str:
    """Today's `elephant` command on the module's database; its output."""
    env = {
        **os.environ,
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
    }
    result = subprocess.run(
        [ELEPHANT, *args], env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert result.returncode == 0, f"elephant {' '.join(args)} failed:\n{result.stderr[-4000:]}"
    return result.stdout


# ------------------------------------------------------------------ rows and schemas


def dump_rows(server: EmbeddedPostgres, settings: Settings) -> Dump:
    """Every row of every table (graphs and ag_catalog included), as JSON objects."""
    rows: Dump = {}
    with psycopg.connect(server.conninfo(dbname=settings.embedded.database)) as conn:
        tables = conn.execute(
            "SELECT schemaname, tablename FROM pg_tables "
            "WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2"
        ).fetchall()
        for schema, table in tables:
            found = conn.execute(
                f'SELECT to_jsonb(t)::text FROM "{schema}"."{table}" AS t'
            ).fetchall()
            rows[f"{schema}.{table}"] = sorted(
                (json.loads(text) for (text,) in found), key=lambda row: json.dumps(row)
            )
    return rows


# Left as today's by the downgrades of 0015 and 0016 (frozen migrations): these functions'
# comments, and the indentation of the function bodies they recreate. Documentation and
# whitespace, not behaviour; everything else must be 0.1.0's exactly.
COMMENTS_LEFT_AS_TODAYS = (
    "elephant_console_open",
    "elephant_keyword_facts",
    "elephant_keyword_memories",
)


def comparable(dump: str) -> str:
    """A schema dump without the comments above, whitespace runs folded to one space."""
    blocks = []
    for block in dump.split("\n\n"):
        if any(f"COMMENT ON FUNCTION public.{name}(" in block for name in COMMENTS_LEFT_AS_TODAYS):
            continue
        blocks.append(" ".join(block.split()))
    return "\n".join(sorted(blocks)) + "\n"


def graph_schemas(rows: Dump) -> tuple[str, ...]:
    """The AGE graphs' schemas: data, not schema (test_schema_parity)."""
    return tuple(sorted({row["name"] for row in rows.get("ag_catalog.ag_graph", [])}))


def missing_rows(before: Dump, after: Dump, skip: dict[str, str]) -> dict[str, Any]:
    """Per table, the rows of ``before`` that ``after`` no longer holds with the same values
    in the columns ``before`` had (a column gone counts as changed)."""
    lost: dict[str, Any] = {}
    for table, rows in before.items():
        if table in skip or not rows:
            continue
        columns = sorted(rows[0])
        remaining = Counter(
            json.dumps([row.get(column) for column in columns]) for row in after.get(table, [])
        )
        for row in rows:
            key = json.dumps([row[column] for column in columns])
            if remaining[key] > 0:
                remaining[key] -= 1
            else:
                lost.setdefault(table, []).append(row)
    return lost


def in_columns_of(rows: Dump, shape: Dump) -> Dump:
    """``rows`` with only the columns ``shape`` has (what a downgrade leaves), and only
    the tables it has."""
    narrowed: Dump = {}
    for table, found in rows.items():
        if table in shape:
            columns = set(shape[table][0]) if shape[table] else set()
            narrowed[table] = [{c: row[c] for c in row if c in columns} for row in found]
    return narrowed


def added_columns(before: Dump, after: Dump) -> dict[str, set[str]]:
    added: dict[str, set[str]] = {}
    for table, rows in before.items():
        if rows and after.get(table):
            new = set(after[table][0]) - set(rows[0])
            if new:
                added[table] = new
    return added


# ------------------------------------------------------------------ the module's database


@dataclass
class Upgrade:
    settings: Settings
    tree: Path
    written: dict[str, Any]  # 0.1.0's report: keys, searches
    before: Dump  # rows as 0.1.0 left them
    after: Dump  # rows right after today's migrate
    schema_before: str
    migrate_output: str
    status_before: str


@pytest.fixture(scope="module")
def upgrade(
    pg_server: EmbeddedPostgres,
    pg_data_dir: Path,
    new_database: Callable[..., str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Upgrade:
    tree = release_tree(tmp_path_factory.mktemp("release_0_1_0"))
    name = new_database("upgrade_from_0_1_0", empty=True)
    settings = make_settings(pg_data_dir, embedded={"database": name})
    written = run_release(tree, "write", settings, tree / "written.json")
    before = dump_rows(pg_server, settings)
    graphs = graph_schemas(before)
    schema_before = schema_dump(pg_server, name, exclude=graphs)
    status_before = elephant_cli(settings, "migrate", "--status")
    migrated = elephant_cli(settings, "migrate")
    return Upgrade(
        settings=settings,
        tree=tree,
        written=written,
        before=before,
        after=dump_rows(pg_server, settings),
        schema_before=schema_before,
        migrate_output=migrated,
        status_before=status_before,
    )


def top_targets(searches: dict[str, list[dict[str, Any]]]) -> dict[str, str | None]:
    """Each query's first hit as the row it stands for: a memory, or a fact's memory."""
    return {
        query: (hits[0]["memory_id"] or hits[0]["id"]) if hits else None
        for query, hits in searches.items()
    }


def first_hits_differ(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The queries of ``new`` whose first hit is not ``old``'s target: the same row, or,
    for a conversation's target, a window holding the same turn (windows overlap: two
    may hold the query's word, and either is the answer)."""
    differs = {}
    old_rows, new_rows = top_targets(old), top_targets(new)
    words = {f"{tenant}|{query}": word for tenant, query, word in driver.QUERIES}
    for query, row in new_rows.items():
        if query not in words or row == old_rows[query]:
            continue
        before, after = old[query][0], new[query][0] if new[query] else {}
        word = words.get(query, "").lower()
        same_turn = (
            before["kind"] == after.get("kind") == "window" and word in after["text"].lower()
        )
        if not (word and same_turn):
            differs[query] = (before["text"], after.get("text"))
    return differs


# ------------------------------------------------------------------ tests


def test_release_0_1_0_wrote_through_its_own_code_and_ranks_each_target_first(
    upgrade: Upgrade,
) -> None:
    written = upgrade.written
    assert written["stored"] == ["stored"] * len(driver.NOTES), "0.1.0 stored every note"
    assert written["rejected"] == "rejected", "its gate refused a note, and logged it"
    assert upgrade.status_before.strip() == (
        f"schema revision: {RELEASE_0_1_0_HEAD} (head: {head_revision()})"
    ), "elephant migrate --status shows what an upgrade will do"
    for table in ("memories", "facts", "turns", "passages", "handoffs", "contradictions",
                  "feedback", "api_keys", "admission_log", "audit_log", "fact_entities"):  # fmt: skip
        assert upgrade.before[f"public.{table}"], f"0.1.0 wrote no {table}: nothing to keep"
    if not MANAGED:
        assert graph_schemas(upgrade.before), "0.1.0 wrote its AGE graphs"
    wrong = {}
    for tenant, query, word in driver.QUERIES:
        hits = written["searches"][f"{tenant}|{query}"]
        if not hits or word.lower() not in hits[0]["text"].lower():
            wrong[query] = hits[0]["text"] if hits else None
    assert wrong == {}, f"0.1.0 did not rank these queries' targets first: {wrong}"


def test_the_row_check_sees_a_changed_value_and_a_lost_row(upgrade: Upgrade) -> None:
    """The comparison below is not vacuous: on 0.1.0's own rows, one value changed and
    one row gone are both reported, and nothing else."""
    damaged = {table: [dict(row) for row in rows] for table, rows in upgrade.before.items()}
    changed = damaged["public.memories"][0]
    changed["text"] += " (edited)"
    gone = damaged["public.facts"].pop()
    lost = missing_rows(upgrade.before, damaged, UNCHANGED_EXCEPT)
    assert lost == {
        "public.memories": [upgrade.before["public.memories"][0]],
        "public.facts": [gone],
    }
    assert missing_rows(upgrade.before, upgrade.before, {}) == {}


def test_migrate_upgrades_to_head_and_keeps_every_row(upgrade: Upgrade) -> None:
    head = head_revision()
    assert f"schema revision: {head} (head: {head})" in upgrade.migrate_output
    lost = missing_rows(upgrade.before, upgrade.after, UNCHANGED_EXCEPT)
    assert lost == {}, f"rows the upgrade lost or changed: {json.dumps(lost)[:3000]}"
    after = {
        table: [r for r in rows if table != "public.jobs" or r["kind"] != "link_entities"]
        for table, rows in upgrade.after.items()
    }  # 0020 queues the entity links' backfill, a job per tenant holding memories
    counts = {
        table: (len(rows), len(after.get(table, [])))
        for table, rows in upgrade.before.items()
        if len(rows) != len(after.get(table, []))
    }
    assert counts == {}, f"row counts (before, after) changed: {counts}"
    added = added_columns(upgrade.before, upgrade.after)
    assert added == {
        "public.memories": {
            "item_namespace", "item_key", "item_value", "item_created_at",
            "superseded_at", "superseded_by",
        }
    }, "the columns 0016 adds (a new migration adding columns: say what old rows hold)"  # fmt: skip
    for table, columns in added.items():
        filled = [row for row in upgrade.after[table] if any(row[c] is not None for c in columns)]
        assert filled == [], f"{table}: old rows hold values in new columns {columns}"
    (meta,) = upgrade.after["public.elephant_meta"]
    assert meta["schema_version"] == head


def test_the_upgraded_schema_is_a_fresh_databases(
    upgrade: Upgrade, pg_server: EmbeddedPostgres, new_database: Callable[..., str]
) -> None:
    fresh = schema_dump(pg_server, new_database("upgrade_fresh"))
    name = upgrade.settings.embedded.database
    upgraded = schema_dump(pg_server, name, exclude=graph_schemas(upgrade.after))
    assert_same_schema(fresh, upgraded, "a database upgraded from 0.1.0")


@dataclass
class Served:
    url: str
    key: str  # 0.1.0's operator key
    stop: Callable[[], None]


@pytest.fixture(scope="module")
def served(upgrade: Upgrade, embedder: Embedder) -> Iterator[Served]:
    """Today's API on the upgraded database, started as `elephant serve` starts it (the
    database opened with auto_migrate, nothing left to do), served over HTTP; ``stop``
    ends it before the rollback, as docs/upgrading.md says."""
    from app.api import create_app

    stack = ExitStack()
    db = Database(upgrade.settings)
    db.open()
    elephant = Elephant(settings=upgrade.settings, db=db, embedder=embedder, llm=None)
    stack.callback(elephant.close)
    url = stack.enter_context(serve_in_thread(create_app(upgrade.settings, elephant)))
    with stack:
        yield Served(url=url, key=upgrade.written["operator_key"], stop=stack.close)


def search_today(url: str, key: str, tenant: str | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {}
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        asked = [(t, q) for t, q, _ in driver.QUERIES] + list(driver.NOT_FOUND)
        for query_tenant, query in asked:
            if tenant is not None and query_tenant != tenant:
                continue
            body = {"query": query, "limit": 10, "consistency": "primary"}
            reply = client.post("/search", json=body, headers={"X-Elephant-Tenant": query_tenant})
            assert reply.status_code == 200, reply.text
            found[f"{query_tenant}|{query}"] = reply.json()["results"]
    return found


def test_todays_api_serves_it_with_the_keys_0_1_0_issued(upgrade: Upgrade, served: Served) -> None:
    health = httpx.get(f"{served.url}/health", timeout=30).json()
    assert health["status"] == "ok", health
    assert health["schema"]["revision"] == head_revision()
    reader = {"Authorization": f"Bearer {upgrade.written['reader_key']}"}
    page = httpx.get(f"{served.url}/memories", headers=reader, params={"limit": 200}, timeout=30)
    assert page.status_code == 200, page.text
    memories = {
        row["id"] for row in upgrade.before["public.memories"] if row["tenant_id"] == "acme"
    }
    assert {item["id"] for item in page.json()["items"]} <= memories
    refused = httpx.post(f"{served.url}/commit", headers=reader, json={"text": "x"}, timeout=30)
    assert refused.status_code == 403, "the read-only key of 0.1.0 is still read-only"


def test_todays_search_ranks_the_same_target_first(upgrade: Upgrade, served: Served) -> None:
    old = upgrade.written["searches"]
    today = search_today(served.url, upgrade.written["operator_key"])
    assert first_hits_differ(old, today) == {}, "first hit (0.1.0, today) differs"
    # the reader key, bound to its tenant, finds the same through today's API
    reader = search_today(served.url, upgrade.written["reader_key"], "acme")
    assert first_hits_differ(old, reader) == {}, "first hit (0.1.0, today's reader) differs"
    ids = {row["id"] for table in ("public.memories", "public.facts")
           for row in upgrade.before[table]}  # fmt: skip
    assert {hit["id"] for found in today.values() for hit in found} <= ids, "only 0.1.0's rows"
    for tenant, query in driver.NOT_FOUND:
        for searches in (old, today):
            texts = [hit["text"] for hit in searches[f"{tenant}|{query}"]]
            assert not [text for text in texts if "Nightjar" in text], "another tenant's row"


ITEM = {"namespace": ["prefs"], "key": "drink", "value": {"drink": "yerba mate from Quilmes"}}
ITEM_QUERY = "yerba mate from Quilmes"


def put_and_delete_an_item(served: Served) -> str:
    """A store item (migration 0016) put and deleted through today's API; its memory id."""
    headers = {
        "Authorization": f"Bearer {served.key}",
        "X-Elephant-Tenant": "acme",
    }
    with httpx.Client(base_url=served.url, headers=headers, timeout=60) as client:
        put = client.put("/store/items", params={"wait": "true"}, json=ITEM)
        assert put.status_code in (200, 201), put.text
        params = {"namespace": "prefs", "key": "drink"}
        gone = client.delete("/store/items", params=params)
        assert gone.status_code == 200 and gone.json()["deleted"], gone.text
        memory_id: str = gone.json()["memory_id"]
    return memory_id


def test_rollback_as_documented_gives_0_1_0_its_database_back(
    upgrade: Upgrade, served: Served, pg_server: EmbeddedPostgres
) -> None:
    """docs/upgrading.md: `elephant migrate --down <0.1.0's head>`, then 0.1.0's code."""
    settings = upgrade.settings
    item = put_and_delete_an_item(served)
    served.stop()  # every process of the new version stops first
    used = dump_rows(pg_server, settings)  # after today's API served it: keys used, access counted
    output = elephant_cli(settings, "migrate", "--down", RELEASE_0_1_0_HEAD)
    assert f"schema revision: {RELEASE_0_1_0_HEAD}" in output
    rolled_back = dump_rows(pg_server, settings)
    lost = missing_rows(in_columns_of(used, rolled_back), rolled_back, UNCHANGED_EXCEPT)
    assert lost == {}, f"rows the rollback lost: {json.dumps(lost)[:3000]}"
    assert {table: len(rows) for table, rows in rolled_back.items()} == {
        table: len(rows) for table, rows in used.items() if table in rolled_back
    }
    report = run_release(
        upgrade.tree,
        "read",
        settings,
        upgrade.tree / "read.json",
        operator_key=upgrade.written["operator_key"],
        queries=[["acme", ITEM_QUERY]],
    )
    searches = report["searches"]
    resurfaced = top_targets({ITEM_QUERY: searches.pop(f"acme|{ITEM_QUERY}")})[ITEM_QUERY]
    assert first_hits_differ(upgrade.written["searches"], searches) == {}
    # as docs/upgrading.md warns: a store item deleted after the upgrade is a plain note
    # again for 0.1.0 (the columns that said "deleted" are gone), and searchable
    assert resurfaced == item
    name = settings.embedded.database
    again = schema_dump(pg_server, name, exclude=graph_schemas(rolled_back))
    assert_same_schema(
        comparable(upgrade.schema_before),
        comparable(again),
        "0.1.0's database after the rollback",
        "0.1.0's schema",
    )
