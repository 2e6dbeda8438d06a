"""Shared by the benchmarks: a real `elephant serve` in a subprocess, distinct notes, and the
tiny LoCoMo sample of the smoke modes."""

from __future__ import annotations

import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def percentiles(samples: list[float], digits: int = 1) -> dict[str, float]:
    """Milliseconds from seconds, rounded to ``digits`` decimals."""
    if not samples:
        return {"n": 0}
    ordered = sorted(samples)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, digits)

    return {
        "n": len(ordered),
        "p50_ms": round(statistics.median(ordered) * 1000, digits),
        "p95_ms": at(0.95),
        "p99_ms": at(0.99),
    }


# ---------------------------------------------------------------- LoCoMo smoke sample

_SESSION_DATES = ["1:56 pm on 8 May, 2023", "1:14 pm on 25 May, 2023", "7:55 pm on 9 June, 2023"]


def _synthetic_locomo(sessions: int) -> list[dict[str, Any]]:
    """One LoCoMo-shaped conversation made in code (seeded): sessions of turns with dia_ids,
    their dates, and questions of every category whose evidence names those turns."""
    rng = random.Random(15)
    speakers = ("Marta", "Kenji")
    conversation: dict[str, Any] = {"speaker_a": speakers[0], "speaker_b": speakers[1]}
    qa: list[dict[str, Any]] = []
    for number in range(1, sessions + 1):
        turns = []
        for index in range(1, 11):
            speaker = speakers[index % 2]
            thing, place = rng.choice(THINGS), rng.choice(PLACES)
            verb, month = rng.choice(VERBS), rng.choice(MONTHS)
            dia_id = f"D{number}:{index}"
            text = f"I {verb} the {thing} in {place} last week; the next visit is in {month}."
            turns.append({"speaker": speaker, "dia_id": dia_id, "text": text})
            if index % 3 == 0:
                qa.append(
                    {
                        "question": f"What did {speaker} do with the {thing} in {place}?",
                        "answer": verb,
                        "evidence": [dia_id],
                        "category": 4,
                    }
                )
        conversation[f"session_{number}_date_time"] = _SESSION_DATES[
            (number - 1) % len(_SESSION_DATES)
        ]
        conversation[f"session_{number}"] = turns
        first, last = turns[0], turns[-1]
        qa.append(
            {
                "question": f"When did {first['speaker']} talk about the plan?",
                "answer": conversation[f"session_{number}_date_time"],
                "evidence": [first["dia_id"]],
                "category": 2,
            }
        )
        qa.append(
            {
                "question": f"What links {first['speaker']}'s and {last['speaker']}'s plans?",
                "answer": "both were done last week",
                "evidence": [first["dia_id"], last["dia_id"]],
                "category": 1,
            }
        )
        qa.append(
            {
                "question": f"Would {first['speaker']} enjoy travelling?",
                "answer": "likely yes",
                "evidence": [turns[1]["dia_id"]],
                "category": 3,
            }
        )
        qa.append(
            {
                "question": f"What did {first['speaker']} sell at the market?",
                "adversarial_answer": "nothing was sold",
                "evidence": [turns[2]["dia_id"]],
                "category": 5,
            }
        )
    return [{"sample_id": "smoke-synthetic", "conversation": conversation, "qa": qa}]


def locomo_smoke_sample(
    dataset: Path, sessions: int = 2, questions_per_category: int = 3
) -> tuple[list[dict[str, Any]], str]:
    """A tiny LoCoMo file for the benchmarks' smoke modes: the first conversation's first
    ``sessions`` sessions and the questions whose evidence lies inside them (a few of each
    category), from ``dataset`` when it exists, else a synthetic sample (so a smoke run
    never needs the dataset). Returns the samples and where they came from."""
    if not dataset.is_file():
        return _synthetic_locomo(sessions), "synthetic (dataset absent)"
    sample = json.loads(dataset.read_text())[0]
    conversation = sample["conversation"]
    kept = {"speaker_a", "speaker_b"}
    for number in range(1, sessions + 1):
        kept |= {f"session_{number}", f"session_{number}_date_time"}
    ids = turn_ids_in(conversation[f"session_{n}"] for n in range(1, sessions + 1))
    inside = [
        qa
        for qa in sample.get("qa", [])
        if qa.get("evidence") and all(str(e).strip() in ids for e in qa["evidence"])
    ]
    per_category: dict[Any, int] = {}
    qa = []
    for question in inside:  # at most `questions_per_category` of each category
        seen = per_category.get(question.get("category"), 0)
        if seen < questions_per_category:
            per_category[question.get("category")] = seen + 1
            qa.append(question)
    sliced = {
        **{key: value for key, value in sample.items() if key not in ("conversation", "qa")},
        "conversation": {key: value for key, value in conversation.items() if key in kept},
        "qa": qa,
    }
    return [sliced], f"{dataset}: first conversation, sessions 1-{sessions}"


def turn_ids_in(sessions: Iterable[list[dict[str, Any]]]) -> set[str]:
    return {str(turn.get("dia_id")) for session in sessions for turn in session}


def write_locomo_smoke_sample(dataset: Path, directory: Path) -> tuple[Path, str]:
    """The smoke sample written as a LoCoMo file in ``directory`` (the benchmarks read files)."""
    samples, source = locomo_smoke_sample(dataset)
    path = directory / "locomo-smoke.json"
    path.write_text(json.dumps(samples))
    return path, source
