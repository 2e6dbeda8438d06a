"""Faults: kill -9 of the app and of the postmaster under concurrent commits, and of the app
during fact extraction. Every acknowledged write must survive, none twice.

    .venv/bin/python benchmarks/faults.py [--clients 4] [--seconds 8] [--smoke]
                                          [--out benchmarks/results/faults.json]

Each scenario runs a real `elephant serve` (keyless local mode, its own data dir):
1. app: writers commit distinct notes; the app process is killed with SIGKILL; a
   new one starts on the same data dir. Acknowledged (201) vs present, duplicate
   texts, and the time until the new app is healthy.
2. postmaster: the same, but the embedded PostgreSQL postmaster is killed while
   the app runs; the app must restart it by itself. Time from the kill to the
   first successful commit, and how the requests in between were answered.
3. extraction: a conversation is committed (facts extracted by the in-process
   worker); the app is killed while jobs run; after a restart every job must end
   done and no fact may be stored twice. Time until the queue is drained.
4. SIGTERM under the same load: seconds until the app has exited and stopped
   the embedded server (target: 5).

`--smoke`: 1 client for 2 s, 20 turns, and the four scenarios run side by side
(each has its own data dir and server; the extraction scenario mostly waits out
the killed worker's 30 s job lease), so their timings are not comparable with a
full run's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from app.config import Settings
from app.db import Database
from app.db.embedded import EmbeddedPostgres

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ is not installed

from benchmarks.common import Server, free_port, note, start_server, stop, wait_healthy

MIN_ACKNOWLEDGED = 5  # writes acknowledged before a fault is injected


class Writers:
    """Client threads committing distinct notes; they keep going through errors."""

    def __init__(self, url: str, clients: int) -> None:
        self.url = url
        self.acknowledged: list[tuple[str, str]] = []  # (memory id, text)
        self.acknowledged_started: list[float] = []  # when each acknowledged request began
        self.statuses: Counter[str] = Counter()
        self.first_success_after: dict[str, float] = {}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._run, args=(i + 1,), daemon=True) for i in range(clients)
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            if thread.ident is not None:  # started (stop may come before start on a failure)
                thread.join(timeout=60)

    def _run(self, seed: int) -> None:
        rng = random.Random(seed)
        n = 0
        with httpx.Client(base_url=self.url, timeout=30) as client:
            while not self._stop.is_set():
                n += 1
                text = note(rng, seed * 1_000_000 + n)
                began = time.monotonic()
                try:
                    response = client.post("/commit", json={"text": text})
                except httpx.HTTPError as exc:
                    self._count(type(exc).__name__)
                    time.sleep(0.05)
                    continue
                self._count(str(response.status_code))
                if response.status_code == 201:
                    with self._lock:
                        self.acknowledged.append((response.json()["memory_id"], text))
                        self.acknowledged_started.append(began)

    def first_acknowledged_after(self, instant: float) -> float | None:
        """When the first write begun after ``instant`` was acknowledged (began time)."""
        with self._lock:
            later = [began for began in self.acknowledged_started if began > instant]
        return min(later) if later else None

    def acknowledged_count(self) -> int:
        with self._lock:
            return len(self.acknowledged)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self.statuses)

    def _count(self, key: str) -> None:
        with self._lock:
            self.statuses[key] += 1


def audit(data_dir: Path, acknowledged: list[tuple[str, str]]) -> dict[str, int]:
    db = Database(Settings.model_validate({"data_dir": str(data_dir)}))
    db.open()
    try:
        with db.tenant("default") as conn:
            ids = [memory_id for memory_id, _ in acknowledged]
            present = conn.execute(
                "SELECT count(*) FROM memories WHERE id = ANY(%s::uuid[])", (ids,)
            ).fetchone()
            duplicates = conn.execute(
                "SELECT count(*) FROM (SELECT text FROM memories GROUP BY text "
                "HAVING count(*) > 1) AS d"
            ).fetchone()
            fact_dupes = conn.execute(
                "SELECT count(*) FROM (SELECT content_hash FROM facts "
                "GROUP BY content_hash HAVING count(*) > 1) AS d"
            ).fetchone()
            jobs = dict(conn.execute("SELECT status, count(*) FROM jobs GROUP BY 1").fetchall())
        return {
            "acknowledged": len(acknowledged),
            "present": int(present[0]) if present else 0,
            "duplicate_texts": int(duplicates[0]) if duplicates else 0,
            "duplicate_facts": int(fact_dupes[0]) if fact_dupes else 0,
            **{f"jobs_{status}": int(n) for status, n in jobs.items()},
        }
    finally:
        db.close()


@contextmanager
def under_load(clients: int, seconds: float) -> Iterator[tuple[Path, int, Server, Writers]]:
    """A fresh data dir, a healthy server, writers committing for ``seconds``; afterwards the
    embedded server is stopped whatever the scenario left running."""
    with tempfile.TemporaryDirectory(prefix="elephant-faults-") as tmp:
        data_dir, port = Path(tmp), free_port()
        server = start_server(data_dir, port, data_dir / "serve.log")
        writers = Writers(server.url, clients)
        try:
            wait_healthy(server.url)
            writers.start()
            time.sleep(seconds)
            # A fault with no acknowledged write before it proves nothing: on a busy machine
            # the first commits (model warm-up) can take longer than `seconds`.
            deadline = time.monotonic() + 60
            while writers.acknowledged_count() < MIN_ACKNOWLEDGED and time.monotonic() < deadline:
                time.sleep(0.1)
            yield data_dir, port, server, writers
        finally:  # whatever failed, leave no writer, app or postmaster behind
            writers.stop()
            stop(server)
            EmbeddedPostgres(data_dir / "embedded").stop()


def kill_app(clients: int, seconds: float) -> dict[str, Any]:
    with under_load(clients, seconds) as (data_dir, port, server, writers):
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait(timeout=30)
        killed = time.monotonic()
        restarted = start_server(data_dir, port, data_dir / "serve.log")
        try:
            recovery = wait_healthy(restarted.url)
            recovered = time.monotonic() - killed
            time.sleep(1)
        finally:
            writers.stop()
            stop(restarted)
        return {
            **audit(data_dir, writers.acknowledged),
            "responses": dict(writers.statuses),
            "recovery_s": round(recovered, 1),
            "healthy_after_restart_s": round(recovery, 1),
        }


def kill_postmaster(clients: int, seconds: float) -> dict[str, Any]:
    with under_load(clients, seconds) as (data_dir, _, server, writers):
        status = EmbeddedPostgres(data_dir / "embedded").status()
        assert status is not None
        os.kill(status.pid, signal.SIGKILL)
        killed = time.monotonic()
        recovered = None
        statuses: dict[str, int] = {}
        while time.monotonic() - killed < 120:
            first = writers.first_acknowledged_after(killed)
            if first is not None:
                statuses = writers.snapshot()
                recovered = first - killed  # a write begun after the kill was acknowledged
                break
            time.sleep(0.05)
        time.sleep(2)
        writers.stop()
        stop(server)
        return {
            **audit(data_dir, writers.acknowledged),
            "responses": dict(writers.statuses),
            "responses_until_recovered": statuses,
            "recovery_s": None if recovered is None else round(recovered, 1),
        }


def kill_during_extraction(turns: int) -> dict[str, Any]:
    rng = random.Random(7)
    conversation = {
        "conversation_id": "faults",
        "session_date": "2024-05-08T10:00:00Z",
        "turns": [
            {"speaker": rng.choice(["Ana", "Ben"]), "text": note(rng, n), "id": f"D1:{n}"}
            for n in range(turns)
        ],
    }
    with tempfile.TemporaryDirectory(prefix="elephant-faults-") as tmp:
        data_dir, port = Path(tmp), free_port()
        server = start_server(data_dir, port, data_dir / "serve.log")
        restarted = None
        try:
            wait_healthy(server.url)
            response = httpx.post(
                f"{server.url}/commit_conversation", json=conversation, timeout=120
            )
            response.raise_for_status()
            time.sleep(0.5)  # the worker has started on the jobs
            server.proc.send_signal(signal.SIGKILL)
            server.proc.wait(timeout=30)
            killed = time.monotonic()
            restarted = start_server(data_dir, port, data_dir / "serve.log")
            wait_healthy(restarted.url)
            drained = None
            while time.monotonic() - killed < 300:
                jobs = httpx.get(f"{restarted.url}/jobs", timeout=30).json()["counts"]
                if jobs.get("queued", 0) == 0 and jobs.get("running", 0) == 0:
                    drained = time.monotonic() - killed
                    break
                time.sleep(0.5)
        finally:  # whatever failed, leave no app and no postmaster behind
            for started in (server, restarted):
                if started is not None:
                    stop(started)
            EmbeddedPostgres(data_dir / "embedded").stop()
        result = audit(data_dir, [])
        return {
            "turns": turns,
            "jobs_done": result.get("jobs_done", 0),
            "jobs_failed": result.get("jobs_failed", 0),
            "jobs_left": result.get("jobs_queued", 0) + result.get("jobs_running", 0),
            "duplicate_facts": result["duplicate_facts"],
            "drained_after_kill_s": None if drained is None else round(drained, 1),
        }


def sigterm_shutdown(clients: int, seconds: float) -> dict[str, Any]:
    """SIGTERM while writers commit and the worker extracts: seconds until the process is
    gone and the embedded server stopped."""
    with under_load(clients, seconds) as (data_dir, _, server, writers):
        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        code = server.proc.wait(timeout=120)
        exited = time.monotonic() - started
        writers.stop()
        postgres_left = EmbeddedPostgres(data_dir / "embedded").status() is not None
        return {
            **audit(data_dir, writers.acknowledged),
            "exit_code": code,
            "shutdown_s": round(exited, 1),
            "postgres_left_running": postgres_left,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--turns", type=int, default=120)
    parser.add_argument("--smoke", action="store_true", help="1 client, 2 s, 20 turns")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/faults.json"))
    args = parser.parse_args()
    clients, seconds, turns = (
        (1, 2.0, 20) if args.smoke else (args.clients, args.seconds, args.turns)
    )
    scenarios: dict[str, Callable[[], dict[str, Any]]] = {
        "kill_app": lambda: kill_app(clients, seconds),
        "kill_postmaster": lambda: kill_postmaster(clients, seconds),
        "kill_during_extraction": lambda: kill_during_extraction(turns),
        "sigterm_shutdown": lambda: sigterm_shutdown(clients, seconds),
    }
    if args.smoke:
        # Each scenario has its own data dir, server and port, and mostly waits (for a
        # job lease, for restarts): side by side they take the time of the slowest.
        with ThreadPoolExecutor(max_workers=len(scenarios)) as pool:
            futures = {name: pool.submit(run) for name, run in scenarios.items()}
            results = {name: future.result() for name, future in futures.items()}
    else:
        results = {name: run() for name, run in scenarios.items()}
    for name, result in results.items():
        print(f"{name}: {json.dumps(result)}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"smoke": args.smoke, **results}, indent=2))
    lost = [
        name
        for name, result in results.items()
        if result.get("acknowledged") != result.get("present")
        or result.get("duplicate_texts")
        or result.get("duplicate_facts")
    ]
    if lost:
        raise SystemExit(f"acknowledged writes lost or doubled in: {', '.join(lost)}")


if __name__ == "__main__":
    main()
