"""Self-healing: the embedded postmaster killed under a running app comes back by itself,
requests fail fast meanwhile, nothing acknowledged is lost; job leases are kept alive
while a job runs and handed back at shutdown."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from app.config import Settings
from app.db import Database
from app.db.embedded import EmbeddedPostgres
from app.providers.embedder import Embedder
from app.services.jobs import queue
from app.services.jobs.leases import LeaseKeeper
from app.services.runtime import Elephant
from tests.conftest import api_client

NOTES = (
    "Marta repaired the greenhouse roof in Tromso after the storm in March 2024",
    "The Lisbon office moved its backups to a tape library during 2023",
    "Kenji adopted a grey cat named Miso from the Osaka shelter last spring",
    "Our quarterly budget review with Finance happens every second Thursday",
    "The violin teacher Elena gives lessons on Saturdays at the community hall",
)


@pytest.fixture
def own_server(tmp_path: Path, embedder: Embedder) -> Iterator[Elephant]:
    """An app on an embedded server of its own, so killing it harms no other test."""
    settings = Settings.model_validate({"data_dir": str(tmp_path), "worker": {"enabled": False}})
    db = Database(settings)
    db.open()
    try:
        yield Elephant(settings=settings, db=db, embedder=embedder, llm=None)
    finally:
        db.close()
        EmbeddedPostgres(tmp_path / "embedded").stop()


def wait_for(predicate: object, seconds: float, what: str) -> float:
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if predicate():  # type: ignore[operator]
            return time.monotonic() - started
        time.sleep(0.1)
    pytest.fail(f"{what} not within {seconds} s")


def test_a_killed_postmaster_comes_back_and_nothing_acknowledged_is_lost(
    own_server: Elephant,
) -> None:
    db = own_server.db
    assert db.embedded is not None
    with api_client(own_server.settings, own_server) as client:
        tenant = {"X-Elephant-Tenant": "crash"}
        stored = []
        for n in range(5):
            response = client.post(
                "/commit",
                json={"text": f"Invoice {n} for Acme is due on {n + 1} March 2025"},
                headers=tenant,
            )
            assert response.status_code == 201, response.text
            stored.append(response.json()["memory_id"])
        status = db.embedded.status()
        assert status is not None
        family = [psutil.Process(status.pid), *psutil.Process(status.pid).children(True)]
        os.kill(status.pid, signal.SIGKILL)  # the postmaster dies; its backends follow
        # (on a busy machine a backend may outlive it for a moment and answer once)
        psutil.wait_procs(family, timeout=30)

        started = time.monotonic()
        first = client.get("/stats", headers=tenant)
        assert first.status_code == 503, first.text
        assert first.headers.get("retry-after") == "2"
        second = client.get("/stats", headers=tenant)
        assert second.status_code in (200, 503)
        assert time.monotonic() - started < 12, "requests must not hang while recovering"

        recovered = wait_for(
            lambda: client.get("/stats", headers=tenant).status_code == 200, 90, "recovery"
        )
        assert recovered < 90
        after = client.post(
            "/commit", json={"text": "Invoice 99 for Acme is due on 9 April 2025"}, headers=tenant
        )
        assert after.status_code == 201, after.text
        with db.tenant("crash") as conn:
            ids = {str(row[0]) for row in conn.execute("SELECT id FROM memories").fetchall()}
        assert set(stored) <= ids and len(ids) == 6


def test_a_server_stopped_on_purpose_stays_stopped(own_server: Elephant) -> None:
    db = own_server.db
    assert db.embedded is not None
    EmbeddedPostgres(db.embedded.root).stop()  # `elephant embedded stop`
    assert db.embedded.revive() is False
    assert db.embedded.status() is None


def test_leases_are_renewed_while_a_job_runs_and_handed_back_at_shutdown(
    own_server: Elephant,
) -> None:
    db = own_server.db
    with db.tenant("leases") as conn:
        job_id = queue.enqueue(conn, "leases", "extract_facts", {}, max_attempts=3)
    with db.worker_connection() as conn, conn.transaction():
        assert [job.id for job in queue.claim(conn, 10)] == [job_id]

    def lease() -> tuple[float, str, int]:
        with db.admin_connection() as conn:
            row = conn.execute(
                "SELECT extract(epoch FROM lease_expires_at - now()), status, attempts "
                "FROM jobs WHERE id = %s",
                (job_id,),
            ).fetchone()
        assert row is not None
        return float(row[0] or 0), str(row[1]), int(row[2])

    with db.admin_connection() as conn:  # pretend most of the lease has gone by
        conn.execute(
            "UPDATE jobs SET lease_expires_at = now() + interval '5 seconds' WHERE id = %s",
            (job_id,),
        )
    keeper = LeaseKeeper(db, interval_s=0.1)
    with keeper.holding(job_id):
        wait_for(lambda: lease()[0] > 10, 10, "the lease renewal")  # was 5 s, renewed to 30 s
        keeper.close()  # shutdown while the job still runs
    _, status, attempts = lease()
    assert (status, attempts) == ("queued", 0)  # back in the queue, the attempt not counted
    with db.worker_connection() as conn, conn.transaction():
        assert [job.id for job in queue.claim(conn, 10)] == [job_id]
