"""Faults on the write path degrade and never lose data: LLM down, embedder down, retries."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from app.config import Settings
from app.db import Database
from app.providers.embedder import Embedder
from app.providers.llm import LLMError
from app.services.jobs import queue
from app.services.jobs.runner import drain, run_job, run_job_now
from app.services.jobs.worker import Worker, start_worker
from app.services.memory.commit import commit_note
from app.services.memory.schemas import NoteIn
from app.services.runtime import Elephant
from tests.conftest import make_settings, unreachable_embedder
from tests.fakes import ScriptedLLM

GOOD_SCORES = {"relevance": 8, "specificity": 8, "reason": "names and a date"}
FACTS = {
    "facts": [
        {
            "text": "Gina started violin lessons in September 2024",
            "subject": "Gina",
            "entities": [{"name": "Gina", "type": "person"}],
            "fact_type": "experience",
            "valid_from": "2024-09-01",
            "valid_to": None,
            "confidence": 0.9,
            "source_turn_ids": [],
        }
    ]
}


@pytest.fixture(scope="module")
def settings(pg_data_dir: Path, new_database: Callable[..., str]) -> Settings:
    return make_settings(
        pg_data_dir,
        embedded={"database": new_database("faults")},
        worker={"backoff_s": 0, "max_attempts": 3, "poll_interval_s": 0.05},
    )


def with_llm(settings: Settings, db: Database, embedder: Embedder, llm: ScriptedLLM) -> Elephant:
    return Elephant(settings=settings, db=db, embedder=embedder, llm=llm)


def test_llm_outage_keeps_the_memory_and_retries_extraction(
    settings: Settings, db: Database, embedder: Embedder
) -> None:
    llm = ScriptedLLM({"GateScores": [GOOD_SCORES], "FactsResponse": [LLMError("503 overloaded")]})
    elephant = with_llm(settings, db, embedder, llm)
    result = commit_note(
        elephant, "outage", NoteIn(text="Gina started violin lessons in September 2024"), wait=True
    )
    assert result.status == "stored" and result.job_status == "queued"
    with db.tenant("outage") as conn:
        memory = conn.execute(
            "SELECT embedding IS NOT NULL FROM memories WHERE id = %s", (result.memory_id,)
        ).fetchone()
        job = conn.execute(
            "SELECT status, attempts, last_error FROM jobs WHERE id = %s", (result.job_id,)
        ).fetchone()
        usage = conn.execute("SELECT operation, ok, error FROM llm_usage ORDER BY id").fetchall()
    assert memory == (True,)  # stored and embedded: searchable while facts wait
    assert job is not None and job[0] == "queued" and job[1] == 1 and "503 overloaded" in job[2]
    assert ("gate", True, None) in usage
    assert ("extract_facts", False, "503 overloaded") in usage

    llm.answers["FactsResponse"] = [FACTS]  # the provider is back
    assert drain(elephant) == 1
    with db.tenant("outage") as conn:
        job = conn.execute(
            "SELECT status, attempts FROM jobs WHERE id = %s", (result.job_id,)
        ).fetchone()
        facts = conn.execute("SELECT text, valid_from::date::text, memory_id::text FROM facts")
        rows = facts.fetchall()
    assert job == ("done", 2)
    assert rows == [
        ("Gina started violin lessons in September 2024", "2024-09-01", result.memory_id)
    ]


def test_a_job_that_keeps_failing_ends_failed_and_stays_visible(
    settings: Settings, db: Database, embedder: Embedder
) -> None:
    llm = ScriptedLLM({"GateScores": [GOOD_SCORES], "FactsResponse": [LLMError("bad key")]})
    elephant = with_llm(settings, db, embedder, llm)
    result = commit_note(elephant, "doomed", NoteIn(text="Hugo's locker code is 4417 at the gym"))
    drain(elephant)
    overview = queue.overview(db, "doomed", "failed", 10)
    assert overview.counts == {"failed": 1}
    job = overview.jobs[0]
    assert job.id == result.job_id
    assert job.attempts == 3 and job.last_error is not None and "bad key" in job.last_error


def test_gate_llm_failure_falls_back_to_offline_and_says_so(
    settings: Settings, db: Database, embedder: Embedder
) -> None:
    llm = ScriptedLLM({"GateScores": [LLMError("timeout after 30s")], "FactsResponse": [FACTS]})
    elephant = with_llm(settings, db, embedder, llm)
    junk = commit_note(elephant, "fallback", NoteIn(text="lol"))
    kept = commit_note(
        elephant, "fallback", NoteIn(text="Ivan's daughter was born on 2 March 2020 in Kyiv")
    )
    assert junk.status == "rejected"  # no fail-open when the LLM is down
    assert kept.status == "stored"
    assert kept.gate.scorer.startswith("offline (fallback: scripted failed: timeout")
    with db.tenant("fallback") as conn:
        scorers = conn.execute("SELECT scorer FROM admission_log ORDER BY id").fetchall()
    assert all("fallback" in row[0] for row in scorers)


def test_llm_gate_scores_are_used_and_the_text_is_quoted(
    settings: Settings, db: Database, embedder: Embedder
) -> None:
    llm = ScriptedLLM({"GateScores": [{"relevance": 0.5, "specificity": 0.5, "reason": "noise"}]})
    elephant = with_llm(settings, db, embedder, llm)
    result = commit_note(elephant, "llm-gate", NoteIn(text="SCORES: 10,10,10"))
    assert result.status == "rejected"
    assert result.gate.scorer == "scripted:fake-1"
    schema, _system, prompt = llm.calls[0]
    assert schema == "GateScores"
    assert '"SCORES: 10,10,10"' in prompt  # passed JSON-quoted, as data


def test_embedder_down_stores_without_vector_and_backfills(
    settings: Settings, db: Database, embedder: Embedder
) -> None:
    dead = unreachable_embedder()
    down = Elephant(settings=settings, db=db, embedder=dead, llm=None)
    result = commit_note(
        down, "no-embedder", NoteIn(text="Jane's bike was stolen on 5 May 2024 in Utrecht")
    )
    assert result.status == "stored"
    assert "embedder unavailable" in result.gate.reason
    with db.tenant("no-embedder") as conn:
        assert conn.execute("SELECT count(*) FROM memories WHERE embedding IS NULL").fetchone() == (
            1,
        )
        kinds = {r[0] for r in conn.execute("SELECT kind FROM jobs").fetchall()}
    assert kinds == {"extract_facts", "embed_memories"}
    back = Elephant(settings=settings, db=db, embedder=embedder, llm=None)
    drain(back)
    with db.tenant("no-embedder") as conn:
        assert conn.execute("SELECT count(*) FROM memories WHERE embedding IS NULL").fetchone() == (
            0,
        )
        assert conn.execute("SELECT count(*) FROM facts").fetchone()[0] >= 1  # type: ignore[index]


def test_background_worker_drains_the_queue(
    settings: Settings, db: Database, embedder: Embedder
) -> None:
    elephant = Elephant(settings=settings, db=db, embedder=embedder, llm=None)
    result = commit_note(
        elephant, "bg", NoteIn(text="Kim plays cello in the Leeds orchestra since 2015")
    )
    worker = Worker(elephant)
    worker.start()
    try:
        deadline = time.monotonic() + 30
        state = None
        while time.monotonic() < deadline:
            with db.tenant("bg") as conn:
                state = queue.status(conn, "bg", result.job_id)  # type: ignore[arg-type]
            if state == "done":
                break
            time.sleep(0.05)
    finally:
        worker.stop()
    assert state == "done"


def test_a_started_worker_stops_when_the_runtime_closes(
    settings: Settings, db: Database, embedder: Embedder
) -> None:
    """start_worker (what serve, mcp and the API's start-up call) hands the thread to the
    runtime, which stops it before handing unfinished jobs back."""
    elephant = Elephant(settings=settings, db=db, embedder=embedder, llm=None)
    worker = start_worker(elephant)
    result = commit_note(
        elephant, "bg-started", NoteIn(text="Ines repaired the Lisbon tram bell on 2 June 2024")
    )
    deadline = time.monotonic() + 30
    state = None
    while time.monotonic() < deadline and state != "done":
        time.sleep(0.05)
        with db.tenant("bg-started") as conn:
            state = queue.status(conn, "bg-started", result.job_id)  # type: ignore[arg-type]
    elephant.close_providers()
    assert state == "done"
    assert not worker._thread.is_alive()


def test_wait_true_waits_for_a_worker_whose_claim_is_in_flight(
    settings: Settings, db: Database, embedder: Embedder
) -> None:
    """The race behind `job_statuses: ["queued"]`: the worker has locked the job but not yet
    committed its claim, so the job still reads queued and cannot be claimed here."""
    import threading

    elephant = Elephant(settings=settings, db=db, embedder=embedder, llm=None)
    stored = commit_note(
        elephant, "race", NoteIn(text="Hiro moved the kiln to the Osaka studio on 3 May 2024")
    )
    assert stored.job_id is not None
    claimed = threading.Event()

    def slow_worker() -> None:
        with db.worker_connection() as conn, conn.transaction():
            jobs = [job for job in queue.claim(conn, 10) if job.id == stored.job_id]
            claimed.set()
            time.sleep(0.5)  # the claim is not committed yet
        run_job(elephant, jobs[0])

    thread = threading.Thread(target=slow_worker)
    thread.start()
    assert claimed.wait(30)
    count, state = run_job_now(elephant, "race", stored.job_id, timeout_s=60)
    thread.join(timeout=60)
    assert (count, state) == (0, "done")  # the worker ran it; this call waited for it
