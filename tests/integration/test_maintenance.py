"""Maintenance jobs on the queue: dedup sweep, backfill, retention, the schedule, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from app.config import Settings
from app.providers.embedder import Embedder, Vectors
from app.providers.embedder_errors import EmbedderError
from app.services.jobs.runner import drain
from app.services.lifecycle import maintenance
from app.services.lifecycle.run import run_now
from app.services.memory.commit import commit_conversation, commit_note
from app.services.memory.feedback import FeedbackIn, give_feedback
from app.services.memory.schemas import ConversationIn, NoteIn, TurnIn
from app.services.ops.doctor import diagnose
from app.services.runtime import Elephant
from tests.conftest import make_settings

ELEPHANT = str(Path(sys.executable).parent / "elephant")


@pytest.fixture(scope="module")
def settings(pg_data_dir: Path, new_database: Callable[..., str]) -> Settings:
    return make_settings(pg_data_dir, embedded={"database": new_database("maintenance")})


class DownEmbedder:
    """An embedder that is away: every write stores its text without a vector."""

    def __init__(self, real: Embedder) -> None:
        self.model_name = real.model_name
        self.dim = real.dim

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        raise EmbedderError("embedder down (test)")

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        raise EmbedderError("embedder down (test)")


def variant(elephant: Elephant, embedder: Any = None, **sections: dict[str, Any]) -> Elephant:
    """The same database, other settings (or embedder)."""
    updates = {
        name: getattr(elephant.settings, name).model_copy(update=values)
        for name, values in sections.items()
    }
    return Elephant(
        settings=elephant.settings.model_copy(update=updates),
        db=elephant.db,
        embedder=embedder or elephant.embedder,
        llm=None,
    )


def notes(elephant: Elephant, tenant: str) -> dict[str, tuple[str, int]]:
    """text -> (id, seen_count) of the tenant's notes."""
    with elephant.db.tenant(tenant) as conn:
        rows = conn.execute(
            "SELECT text, id::text, seen_count FROM memories WHERE kind = 'note'"
        ).fetchall()
    return {str(text): (str(i), int(seen)) for text, i, seen in rows}


# ---------------------------------------------------------------- dedup sweep and backfill


def test_dedup_sweep_merges_true_duplicates_and_keeps_updates(elephant: Elephant) -> None:
    tenant = "pins"
    original = "Carol's favourite colour is teal."
    # Dedup is tested, not admission: no gate. And a looser cosine rule (MiniLM puts the
    # PIN pair at 0.85): the two PINs are close neighbours, kept apart by what they say.
    ungated = variant(elephant, gate={"enabled": False}, dedup={"near_cosine": 0.8})
    elephant = variant(elephant, dedup={"near_cosine": 0.8})
    stored = commit_note(ungated, tenant, NoteIn(text=original))
    for text in ("My PIN is 1234.", "My PIN is 5678."):
        assert commit_note(ungated, tenant, NoteIn(text=text)).memory_id is not None
    # stored while the embedder was away: no vector, so commit could not see the duplicate
    late = commit_note(
        variant(ungated, DownEmbedder(elephant.embedder)),
        tenant,
        NoteIn(text="Carol's favourite colour is teal!"),
    )
    forced = commit_note(
        elephant, tenant, NoteIn(text="Carol's favourite colour: teal.", force=True)
    )
    assert stored.memory_id and late.memory_id and forced.memory_id
    give_feedback(elephant, tenant, FeedbackIn(memory_id=UUID(late.memory_id), helpful=True))
    assert len(notes(elephant, tenant)) == 5

    waiting = run_now(elephant, tenant, "dedup", dry_run=True)
    assert waiting.counts == {"merged": 0}  # the late one has no vector: the cursor waits
    filled = run_now(elephant, tenant, "backfill", dry_run=False)
    assert filled.counts["vectors"] >= 1 and filled.detail["missing_after"]["memory_vectors"] == 0

    dry = run_now(elephant, tenant, "dedup", dry_run=True)
    assert dry.counts == {"merged": 1}
    assert len(notes(elephant, tenant)) == 5  # a dry run changes nothing
    report = run_now(elephant, tenant, "dedup", dry_run=False)
    assert report.counts == {"merged": 1}
    assert report.detail["merges"][0]["kept"] == stored.memory_id
    assert report.detail["merges"][0]["merged"] == late.memory_id
    assert report.detail["kept_apart"] >= 1  # the PIN update, close but different
    left = notes(elephant, tenant)
    assert set(left) == {
        original,
        "My PIN is 1234.",
        "My PIN is 5678.",
        "Carol's favourite colour: teal.",  # stored with force: never merged away
    }
    assert left[original] == (stored.memory_id, 2)
    with elephant.db.tenant(tenant) as conn:
        row = conn.execute(
            "SELECT memory_id::text, count(*) FROM feedback GROUP BY memory_id"
        ).fetchone()
    assert row == (stored.memory_id, 1)  # the merged note's feedback moved with it
    # the next sweep starts where this one stopped: nothing new, nothing merged
    assert run_now(elephant, tenant, "dedup", dry_run=False).counts == {"merged": 0}


# ---------------------------------------------------------------- retention


def backdate(elephant: Elephant, tenant: str, days: int, *, conversation: str | None = None,
             memory: str | None = None) -> None:  # fmt: skip
    interval = f"{days} days"
    with elephant.db.admin_connection() as conn:
        if conversation is not None:
            for table, column in (("conversations", "id"), ("turns", "conversation_id"),
                                  ("memories", "conversation_id"), ("facts", "conversation_id")):  # fmt: skip
                extra = ", last_seen_at = now() - %s::interval" if table == "memories" else ""
                conn.execute(
                    f"UPDATE {table} SET created_at = now() - %s::interval{extra} "
                    f"WHERE tenant_id = %s AND {column} = %s",
                    (interval, *([interval] if extra else []), tenant, conversation),
                )
        if memory is not None:
            conn.execute(
                "UPDATE memories SET created_at = now() - %s::interval, "
                "last_seen_at = now() - %s::interval WHERE id = %s",
                (interval, interval, memory),
            )


def chat(elephant: Elephant, tenant: str, name: str, source: str) -> str:
    turns = [
        TurnIn(speaker="Ana", text=f"I adopted a greyhound called {name} last spring."),
        TurnIn(speaker="Ben", text=f"Does {name} like long walks by the river?"),
        TurnIn(speaker="Ana", text=f"{name} loves the river path near Lisbon."),
    ]
    result = commit_conversation(
        elephant, tenant, ConversationIn(turns=turns, source=source, force=True), wait=True
    )
    return result.conversation_id


def count(elephant: Elephant, tenant: str, query: str, *args: Any) -> int:
    with elephant.db.tenant(tenant) as conn:
        row = conn.execute(query, args).fetchone()
    return int(row[0]) if row else 0


def test_retention_erases_only_expired_rows_of_the_named_source(elephant: Elephant) -> None:
    tenant = "ttl"
    old = chat(elephant, tenant, "Biscuit", "chat")
    fresh = chat(elephant, tenant, "Pepper", "chat")
    other = chat(elephant, tenant, "Mochi", "email")
    old_note = commit_note(
        elephant, tenant, NoteIn(text="Ana's gym pass expires in May.", source="chat")
    )
    kept_note = commit_note(
        elephant, tenant, NoteIn(text="Ana's boss is Dr Ortega.", source="email")
    )
    assert old_note.memory_id and kept_note.memory_id
    drain(elephant)
    old_facts = count(
        elephant, tenant, "SELECT count(*) FROM facts WHERE conversation_id = %s", old
    )
    assert old_facts > 0, "the offline extractor found no fact to erase"
    backdate(elephant, tenant, 40, conversation=old)
    backdate(elephant, tenant, 40, conversation=other)
    backdate(elephant, tenant, 40, memory=old_note.memory_id)
    backdate(elephant, tenant, 40, memory=kept_note.memory_id)

    keeping = variant(elephant, lifecycle={"retention": {"chat": 30}})
    dry = run_now(keeping, tenant, "retention", dry_run=True)
    assert dry.counts == {"conversations": 1, "memories": 1, "facts": 0}
    assert count(elephant, tenant, "SELECT count(*) FROM conversations") == 3
    report = run_now(keeping, tenant, "retention", dry_run=False)
    assert report.counts == {"conversations": 1, "memories": 1, "facts": 0}
    assert report.detail["removed"]["facts"] >= old_facts

    def rows(table: str, conversation: str) -> int:
        return count(
            elephant, tenant, f"SELECT count(*) FROM {table} WHERE conversation_id = %s",
            conversation,
        )  # fmt: skip

    for table in ("turns", "memories", "facts"):
        assert rows(table, old) == 0, table
        assert rows(table, fresh) > 0, table  # the same source, not expired
        assert rows(table, other) > 0, table  # expired, but a source with no rule
    assert set(notes(elephant, tenant)) == {"Ana's boss is Dr Ortega."}
    with elephant.db.admin_connection() as conn:
        actions = [
            str(row[0])
            for row in conn.execute(
                "SELECT action FROM audit_log WHERE tenant_id = %s ORDER BY id", (tenant,)
            ).fetchall()
        ]
    assert actions.count("erase") == 2 and actions[-1] == "maintain.retention"
    assert run_now(keeping, tenant, "retention", dry_run=False).total == 0


# ---------------------------------------------------------------- the schedule


def jobs_of(elephant: Elephant, kind: str) -> dict[str, int]:
    with elephant.db.admin_connection() as conn:
        rows = conn.execute(
            "SELECT tenant_id, count(*) FROM jobs WHERE kind = %s GROUP BY tenant_id", (kind,)
        ).fetchall()
    return {str(tenant): int(n) for tenant, n in rows}


def test_the_schedule_queues_one_job_per_tenant_under_concurrency(elephant: Elephant) -> None:
    for tenant in ("sched-a", "sched-b", "sched-c"):
        commit_note(elephant, tenant, NoteIn(text=f"{tenant} keeps its keys in the blue bowl."))
    scheduled = variant(elephant, maintenance={"schedule": {"decay": 1.0}})
    tenants = maintenance.tenants(scheduled)
    assert {"sched-a", "sched-b", "sched-c"} <= set(tenants)
    workers = 4
    barrier = threading.Barrier(workers)
    results: list[dict[str, int]] = []
    errors: list[BaseException] = []

    def schedule() -> None:
        try:
            barrier.wait(timeout=30)
            results.append(maintenance.enqueue_due(scheduled))
        except Exception as exc:  # noqa: BLE001  (reported by the test below)
            errors.append(exc)

    threads = [threading.Thread(target=schedule) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    assert sum(result["decay"] for result in results) == len(tenants)
    assert jobs_of(elephant, "maintain_decay") == dict.fromkeys(tenants, 1)
    # run them; within the interval nothing is due again
    drain(elephant)
    assert maintenance.enqueue_due(scheduled) == {"decay": 0}
    assert jobs_of(elephant, "maintain_decay") == dict.fromkeys(tenants, 1)
    with elephant.db.tenant("sched-a") as conn:
        run = conn.execute(
            "SELECT kind, triggered_by, report -> 'counts' FROM maintenance_runs"
        ).fetchone()
    assert run is not None and run[:2] == ("decay", "schedule")
    doctor = {check.name: check for check in diagnose(scheduled).checks}["maintenance"]
    assert doctor.level == "ok" and "decay: every 1 h, last " in doctor.detail


def test_the_scheduler_waits_an_interval_and_then_ticks_on_its_clock(elephant: Elephant) -> None:
    now = [1000.0]
    scheduled = variant(
        elephant, maintenance={"schedule": {"dedup": 2.0}, "check_interval_s": 60.0}
    )
    ticker = maintenance.Scheduler(scheduled, lambda: now[0])
    assert ticker.tick() is None  # not before one interval has passed
    now[0] += 61
    first = ticker.tick()
    assert first is not None and first["dedup"] >= 1
    assert ticker.tick() is None  # the next check is an interval later
    now[0] += 61
    assert ticker.tick() == {"dedup": 0}  # queued already: nothing more
    off = variant(scheduled, maintenance={"enabled": False})
    assert maintenance.Scheduler(off, lambda: now[0] + 10_000).tick() is None


# ---------------------------------------------------------------- the CLI


def cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
        "ELEPHANT_LIFECYCLE_RETENTION": '{"nowhere": 1}',
    }
    return subprocess.run(
        [ELEPHANT, "maintain", *args], env=env, capture_output=True, text=True, timeout=300
    )


def test_the_maintain_commands_run(elephant: Elephant, settings: Settings) -> None:
    commit_note(elephant, "cli-m", NoteIn(text="Iris waters the ferns every Sunday."))
    for kind in ("dedup", "retention"):  # every kind runs the same code path
        dry = cli(settings, kind, "--tenant", "cli-m", "--dry-run")
        assert dry.returncode == 0, dry.stderr
        assert json.loads(dry.stdout)["dry_run"] is True
    done = cli(settings, "decay", "--all")
    assert done.returncode == 0, done.stderr
    reports = json.loads(done.stdout)
    assert "cli-m" in {report["tenant"] for report in reports}
    assert all(report["kind"] == "decay" and not report["dry_run"] for report in reports)
    with elephant.db.tenant("cli-m") as conn:
        row = conn.execute(
            "SELECT triggered_by FROM maintenance_runs WHERE kind = 'decay'"
        ).fetchone()
    assert row == ("cli",)
    status = cli(settings, "status")
    assert status.returncode == 0, status.stderr
    assert {kind["kind"] for kind in json.loads(status.stdout)} >= {"decay", "retention"}
    both = cli(settings, "dedup", "--tenant", "cli-m", "--all")
    assert both.returncode != 0 and "not both" in both.stderr
    reembed = cli(settings, "reembed", "--status")
    assert reembed.returncode == 0, reembed.stderr
    assert json.loads(reembed.stdout)["phase"] == "idle"
