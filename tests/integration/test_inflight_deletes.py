"""Deletes win over work in flight (issue 39, reproduction 3): a job that finishes after
its source was deleted, replaced or erased writes nothing searchable.

Two kinds of test. Deterministic ones hold a job's LLM call (a scripted LLM that
waits): between the extraction's read and its write, a delete, a newer put or an
erasure ends meanwhile; or after its write, before its commit, a delete waits for it.
Each failed before app/services/jobs/sources.py (the fact came back active and found by
search), but the guard for a whole tenant's erasure (foreign keys refused that before).
Races run put/delete and commit/erase pairs over real HTTP (CLIENTS at a time) with the
background worker running as ``elephant serve`` runs it, then look for rows of deleted
sources via SQL and /search; before the fix 9 and 35 of 200 store pairs (two runs) left
an active fact. The commit/erase race passed before too (the foreign keys refused the
job's rows, as failed attempts): it guards the erasure path.

Runtime, RACE_PAIRS = 200 of each kind, on the shared 2-core box at load average 5.6:
40 s for the module (50 s with pytest's start), of which the races 12 s and 9.5 s
(`pytest -q tests/integration/test_inflight_deletes.py --durations=4`).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.api import create_app
from app.config import Settings
from app.db import Database
from app.services.access.erasure import EraseIn, erase
from app.services.jobs.runner import run_job_now
from app.services.jobs.worker import start_worker
from app.services.memory.commit import commit_conversation, commit_note
from app.services.memory.schemas import ConversationIn, NoteIn
from app.services.retrieval.schemas import SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant
from app.services.store.items import delete_item, put_item
from app.services.store.schemas import ItemIn, ItemRef
from tests.conftest import make_settings, operator_key, serve_in_thread
from tests.fakes import ScriptedLLM

RACE_PAIRS = 200  # put/delete pairs, and as many commit/erase pairs
CLIENTS = 4  # threads sending pairs at once
HOLD_S = 30.0


@pytest.fixture(scope="module")
def settings(pg_data_dir: Path, new_database: Callable[..., str]) -> Settings:
    name = new_database("inflight")
    return make_settings(
        pg_data_dir,
        embedded={"database": name},
        worker={"poll_interval_s": 0.02, "backoff_s": 0},
        # the races send 400 erasures (admin) and 800 writes in well under a minute
        auth={"rate_read_per_minute": 0, "rate_write_per_minute": 0, "rate_admin_per_minute": 0},
    )


class Held:
    """A scripted LLM answer that waits until the test lets it go."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.reached = threading.Event()
        self.go = threading.Event()

    def __call__(self, system: str, prompt: str) -> dict[str, Any]:
        self.reached.set()
        assert self.go.wait(HOLD_S), "the test never released the LLM call"
        return self.answer


def held_extraction(facts: list[dict[str, Any]]) -> Held:
    """The extraction waits: the job has read its source and holds no lock."""
    return Held({"facts": facts})


def run_held(
    elephant: Elephant,
    tenant: str,
    job_id: int,
    held: Held,
    meanwhile: Callable[[], Any],
    answers: dict[str, list[Any]] | None = None,
) -> tuple[int, str]:
    """Run the job with the held LLM call in a thread (the extraction's, unless
    ``answers`` script another); ``meanwhile`` runs while it waits."""
    slow = Elephant(
        settings=elephant.settings,
        db=elephant.db,
        embedder=elephant.embedder,
        llm=ScriptedLLM(answers or {"FactsResponse": [held]}),
    )
    result: list[tuple[int, str]] = []
    thread = threading.Thread(target=lambda: result.append(run_job_now(slow, tenant, job_id)))
    thread.start()
    try:
        assert held.reached.wait(HOLD_S), "the extraction never reached the LLM"
        meanwhile()
    finally:
        held.go.set()
        thread.join(HOLD_S)
    assert result, "the job did not finish"
    return result[0]


def one(db: Database, tenant: str, query: str, *params: Any) -> Any:
    with db.tenant(tenant) as conn:
        row = conn.execute(query, (tenant, *params)).fetchone()
    assert row is not None
    return row[0]


def job_reason(db: Database, tenant: str, job_id: int) -> tuple[str, str | None]:
    with db.tenant(tenant) as conn:
        row = conn.execute(
            "SELECT status, last_error FROM jobs WHERE tenant_id = %s AND id = %s",
            (tenant, job_id),
        ).fetchone()
    assert row is not None
    return str(row[0]), row[1]


def hit_texts(elephant: Elephant, tenant: str, query: str) -> list[str]:
    return [hit.text for hit in search(elephant, tenant, SearchRequest(query=query)).hits]


# ------------------------------------------------------------------ deterministic


def test_a_store_delete_during_extraction_leaves_no_fact(elephant: Elephant) -> None:
    """Reproduction 3, held open: the delete lands while the LLM works on the item."""
    tenant = "inflight_store"
    text = "Quillon keeps the spare boat key under the blue flowerpot"
    held = held_extraction(
        [{"text": text, "subject": "Quillon", "entities": [{"name": "Quillon"}]}]
    )
    item = ItemIn(namespace=["keys"], key="boat", value={"content": text})
    put = put_item(elephant, tenant, item)
    assert put.job_id is not None

    def delete() -> None:
        assert delete_item(elephant, tenant, ItemRef(namespace=["keys"], key="boat")).deleted

    count, state = run_held(elephant, tenant, put.job_id, held, delete)
    assert (count, state) == (0, "done")
    assert one(elephant.db, tenant, "SELECT count(*) FROM facts WHERE tenant_id = %s") == 0
    assert one(elephant.db, tenant, "SELECT count(*) FROM fact_entities WHERE tenant_id = %s") == 0
    reason = job_reason(elephant.db, tenant, put.job_id)[1]
    assert reason is not None and "deleted, replaced or erased" in reason
    assert not any("Quillon" in hit for hit in hit_texts(elephant, tenant, "Quillon boat key"))


def test_a_put_replacing_the_item_during_extraction_closes_the_old_version(
    elephant: Elephant,
) -> None:
    """The old version's extraction finishes after a newer put: only the new one is current."""
    tenant = "inflight_replace"
    old = "Quillon parks the red van on Elm Street"
    held = held_extraction([{"text": old, "subject": "Quillon"}])
    first = put_item(elephant, tenant, ItemIn(namespace=["cars"], key="van", value={"c": old}))
    assert first.job_id is not None
    newer = ItemIn(namespace=["cars"], key="van", value={"c": "Quillon sold the red van"})
    run_held(elephant, tenant, first.job_id, held, lambda: put_item(elephant, tenant, newer))
    active = one(
        elephant.db,
        tenant,
        "SELECT count(*) FROM facts WHERE tenant_id = %s AND status = 'active' AND text = %s",
        old,
    )
    assert active == 0
    assert not any(old in hit for hit in hit_texts(elephant, tenant, "Quillon red van Elm Street"))


def test_a_delete_while_the_job_writes_waits_and_closes_its_facts(elephant: Elephant) -> None:
    """The other order: the job has locked the item and written its fact, and waits on
    the contradiction check's LLM call before it commits. The delete waits for it, then
    closes the fact (before, the delete ended first and the fact committed active)."""
    tenant = "inflight_late_delete"
    older = "Quillon keeps the garage key in the kitchen drawer"
    newer = "Quillon keeps the garage key under the doormat"
    fact = {"subject": "Quillon", "entities": [{"name": "Quillon", "type": "person"}]}
    first = ItemIn(namespace=["keys"], key="garage", value={"c": older})
    scripted = ScriptedLLM({"FactsResponse": [{"facts": [{"text": older, **fact}]}]})
    with_llm = Elephant(
        settings=elephant.settings, db=elephant.db, embedder=elephant.embedder, llm=scripted
    )
    assert put_item(with_llm, tenant, first, wait=True).facts == 1
    second = ItemIn(namespace=["keys"], key="garage2", value={"c": newer})
    put = put_item(elephant, tenant, second)
    assert put.job_id is not None
    verdict = Held({"contradicts": False, "confidence": 0.2, "reason": "both may hold"})
    answers = {
        "FactsResponse": [{"facts": [{"text": newer, **fact}]}],
        "ContradictionAnswer": [verdict],
    }
    deleting = threading.Thread(
        target=delete_item, args=(elephant, tenant, ItemRef(namespace=["keys"], key="garage2"))
    )

    def delete() -> None:
        deleting.start()
        deleting.join(1.0)
        assert deleting.is_alive(), "the delete did not wait for the job's commit"

    count, state = run_held(elephant, tenant, put.job_id, verdict, delete, answers)
    deleting.join(HOLD_S)
    assert (count, state) == (1, "done")
    statuses = "SELECT status FROM facts WHERE tenant_id = %s AND memory_id = %s"
    with elephant.db.tenant(tenant) as conn:
        rows = conn.execute(statuses, (tenant, put.item.memory_id)).fetchall()
    assert [row[0] for row in rows] == ["superseded"]
    assert not any(newer in hit for hit in hit_texts(elephant, tenant, "Quillon garage doormat"))


def test_an_erasure_during_extraction_leaves_nothing_naming_the_subject(
    elephant: Elephant,
) -> None:
    """The span's turns naming the subject are erased while the LLM works on them: the
    job writes nothing, and a new job extracts from the turns that remain."""
    tenant = "inflight_erase"
    conversation = ConversationIn.model_validate(
        {
            "turns": [
                {"speaker": "Brunhilde", "text": "I moved to Quimper last spring.", "id": "t1"},
                {"speaker": "Oswin", "text": "I collect old chess clocks.", "id": "t2"},
            ],
            "force": True,
        }
    )
    committed = commit_conversation(elephant, tenant, conversation)
    assert committed.job_ids
    held = held_extraction(
        [
            {"text": "Brunhilde moved to Quimper", "subject": "Brunhilde",
             "entities": [{"name": "Brunhilde", "type": "person"}, {"name": "Quimper"}]},
            {"text": "Oswin collects old chess clocks", "subject": "Oswin"},
        ]
    )  # fmt: skip

    def forget() -> None:
        erase(elephant, tenant, EraseIn(subject="Brunhilde"))

    job_id = committed.job_ids[0]
    count, state = run_held(elephant, tenant, job_id, held, forget)
    assert (count, state) == (0, "done")
    naming = "SELECT count(*) FROM facts WHERE tenant_id = %s AND text ~* 'brunhilde'"
    assert one(elephant.db, tenant, naming) == 0
    links = "SELECT count(*) FROM fact_entities WHERE tenant_id = %s AND entity_key ~* 'brunhilde'"
    assert one(elephant.db, tenant, links) == 0
    reason = job_reason(elephant.db, tenant, job_id)[1]
    assert reason is not None and "extracts what remains" in reason
    again = one(
        elephant.db, tenant, "SELECT max(id) FROM jobs WHERE tenant_id = %s AND kind = %s",
        "extract_facts",
    )  # fmt: skip
    assert again != job_id
    assert run_job_now(elephant, tenant, int(again))[1] == "done"  # offline, from Oswin's turn
    assert one(elephant.db, tenant, naming) == 0
    assert not any("Brunhilde" in hit for hit in hit_texts(elephant, tenant, "Brunhilde Quimper"))


def test_a_tenant_erased_during_extraction_gets_nothing_back(elephant: Elephant) -> None:
    """The whole tenant goes while its extraction waits on the LLM: nothing comes back
    (a guard: the foreign keys to tenants already refused the job's rows before)."""
    tenant = "inflight_tenant"
    text = "Quillon hides the attic key in the red teapot"
    stored = commit_note(elephant, tenant, NoteIn(text=text, force=True))
    assert stored.job_id is not None
    held = held_extraction([{"text": text, "subject": "Quillon"}])
    run_held(
        elephant, tenant, stored.job_id, held,
        lambda: erase(elephant, tenant, EraseIn(tenant=True)),
    )  # fmt: skip
    with elephant.db.admin_connection() as conn:
        for table in ("facts", "memories", "passages", "fact_entities", "jobs"):
            query = f"SELECT count(*) FROM {table} WHERE tenant_id = %s"
            row = conn.execute(query, (tenant,)).fetchone()
            assert row is not None and row[0] == 0, table
        tenants = conn.execute("SELECT count(*) FROM tenants WHERE id = %s", (tenant,))
        assert tenants.fetchone() == (0,), "the job brought the erased tenant's row back"


# ------------------------------------------------------------------ races, over HTTP


@pytest.fixture(scope="module")
def served(settings: Settings, elephant: Elephant) -> Iterator[httpx.Client]:
    """The API on a real port with the background worker running (what serve starts)."""
    worker = start_worker(elephant)
    try:
        with serve_in_thread(create_app(settings, elephant)) as url:
            headers = {"Authorization": f"Bearer {operator_key(elephant.db)}"}
            with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
                yield client
    finally:
        worker.stop()


def in_parallel(
    pairs: int, send: Callable[[httpx.Client, int], None], client: httpx.Client
) -> None:
    """``send(client, i)`` for every pair, CLIENTS at a time; the first error is raised."""
    with ThreadPoolExecutor(CLIENTS) as pool:
        list(pool.map(lambda i: send(client, i), range(pairs)))


def drained(db: Database, tenant: str, timeout_s: float = 120.0) -> None:
    query = "SELECT count(*) FROM jobs WHERE tenant_id = %s AND status IN ('queued', 'running')"
    deadline = time.monotonic() + timeout_s
    while one(db, tenant, query):
        assert time.monotonic() < deadline, "the worker did not drain the queue"
        time.sleep(0.1)


def token(i: int) -> str:
    return f"zq{i:03d}{uuid.uuid4().hex[:6]}"


def not_found(client: httpx.Client, tenant: str, words: list[str]) -> list[str]:
    """The words /search still finds in a hit's text (none expected)."""
    found = []
    for word in words:
        response = client.post(
            "/search", json={"query": word, "limit": 5}, headers={"X-Elephant-Tenant": tenant}
        )
        assert response.status_code == 200, response.text
        if any(word in hit["text"] for hit in response.json()["results"]):
            found.append(word)
    return found


def test_racing_store_puts_and_deletes_leave_nothing_searchable(
    served: httpx.Client, elephant: Elephant
) -> None:
    tenant = "race_store"
    words = [token(i) for i in range(RACE_PAIRS)]
    head = {"X-Elephant-Tenant": tenant}

    def pair(client: httpx.Client, i: int) -> None:
        text = f"Marta keeps passport {words[i]} in the kitchen drawer"
        body = {"namespace": ["race"], "key": f"k{i}", "value": {"content": text}}
        assert client.put("/store/items", json=body, headers=head).status_code == 200
        gone = client.delete(
            "/store/items", params={"namespace": "race", "key": f"k{i}"}, headers=head
        )
        assert gone.status_code == 200 and gone.json()["deleted"], gone.text

    in_parallel(RACE_PAIRS, pair, served)
    drained(elephant.db, tenant)
    db = elephant.db
    assert (
        one(db, tenant, "SELECT count(*) FROM facts WHERE tenant_id = %s AND status = 'active'")
        == 0
    )
    current = "SELECT count(*) FROM memories WHERE tenant_id = %s AND superseded_at IS NULL"
    assert one(db, tenant, current) == 0
    assert not_found(served, tenant, words) == []
    # the check can fail: the word of an item that stays is found
    kept = token(RACE_PAIRS)
    body = {"namespace": ["race"], "key": "kept", "value": {"content": f"Marta keeps {kept}"}}
    control = {"X-Elephant-Tenant": "race_control"}
    put = served.put("/store/items", json=body, params={"wait": "true"}, headers=control)
    assert put.status_code == 200, put.text
    assert not_found(served, "race_control", [kept]) == [kept]


def test_racing_commits_and_erasures_leave_nothing_searchable(
    served: httpx.Client, elephant: Elephant
) -> None:
    tenant = "race_erase"
    words = [token(i) for i in range(RACE_PAIRS)]
    head = {"X-Elephant-Tenant": tenant}

    def pair(client: httpx.Client, i: int) -> None:
        note = {"text": f"Ingrid stores ticket {words[i]} in the red folder", "force": True}
        stored = client.post("/commit", json=note, headers=head)
        assert stored.status_code in (200, 201), stored.text
        memory = stored.json()["memory_id"]
        erased = client.post("/erase", json={"memory_ids": [memory]}, headers=head)
        assert erased.status_code == 200, erased.text

    in_parallel(RACE_PAIRS, pair, served)
    drained(elephant.db, tenant)
    db = elephant.db
    for table in ("facts", "memories", "passages", "fact_entities"):
        assert one(db, tenant, f"SELECT count(*) FROM {table} WHERE tenant_id = %s") == 0, table
    failed = "SELECT count(*) FROM jobs WHERE tenant_id = %s AND status = 'failed'"
    assert one(db, tenant, failed) == 0
    assert not_found(served, tenant, words) == []
