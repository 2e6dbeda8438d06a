"""Shared by the HTTP benchmarks: a real `elephant serve` in a subprocess, distinct notes."""

from __future__ import annotations

import os
import random
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

ELEPHANT = str(Path(sys.executable).parent / "elephant")

PEOPLE = ["Marta", "Kenji", "Ola", "Priya", "Tomas", "Amara", "Lena", "Diego", "Yusuf", "Ines"]
PLACES = ["Tromso", "Lisbon", "Osaka", "Nairobi", "Quito", "Tartu", "Perth", "Cork", "Lyon"]
THINGS = [
    "greenhouse roof", "tape library", "grey cat", "violin lessons", "budget review",
    "bicycle repair", "solar panels", "rowing club", "pottery kiln", "chess tournament",
    "server migration", "wedding venue", "dentist appointment", "garden shed", "piano tuning",
]  # fmt: skip
VERBS = ["booked", "repaired", "cancelled", "organised", "paid for", "moved", "inspected"]
MONTHS = ["January", "March", "May", "July", "September", "November"]


def note(rng: random.Random, n: int) -> str:
    """A specific, gate-worthy note that differs from every other in its facts."""
    return (
        f"{rng.choice(PEOPLE)} {rng.choice(VERBS)} the {rng.choice(THINGS)} in "
        f"{rng.choice(PLACES)} on {rng.randint(1, 28)} {rng.choice(MONTHS)} "
        f"{rng.randint(2019, 2025)}, reference {n}-{rng.randint(1000, 9999)}"
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    url: str
    log_path: Path


def start_server(data_dir: Path, port: int, log_path: Path, **env: str) -> Server:
    environ = {
        **os.environ,
        "ELEPHANT_DATA_DIR": str(data_dir),
        "ELEPHANT_SERVER_PORT": str(port),
        "ELEPHANT_LOG_LEVEL": "WARNING",
        **env,
    }
    with log_path.open("a") as log_file:
        proc = subprocess.Popen(
            [ELEPHANT, "serve", "--auth", "local"], env=environ, stdout=log_file, stderr=log_file
        )
    return Server(proc, f"http://127.0.0.1:{port}", log_path)


def wait_healthy(url: str, timeout_s: float = 180) -> float:
    """Seconds until /health says ok."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        try:
            if httpx.get(f"{url}/health", timeout=2).json().get("status") == "ok":
                return time.monotonic() - started
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} not healthy within {timeout_s} s")


@contextmanager
def served(data_dir: Path, **env: str) -> Iterator[Server]:
    port = free_port()
    server = start_server(data_dir, port, data_dir / "serve.log", **env)
    try:
        wait_healthy(server.url)
        yield server
    finally:
        stop(server)


def stop(server: Server) -> None:
    if server.proc.poll() is None:
        server.proc.terminate()
        try:
            server.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait(timeout=10)


def percentiles(samples: list[float]) -> dict[str, float]:
    if not samples:
        return {"n": 0}
    ordered = sorted(samples)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)

    return {
        "n": len(ordered),
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": at(0.95),
        "p99_ms": at(0.99),
    }
