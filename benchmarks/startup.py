"""Start-up time: of the embedded server (cold, warm, adopt), and of the CLI commands a
user types (`--mode commands`).

    .venv/bin/python benchmarks/startup.py [--runs 5] [--smoke]
        [--mode embedded|commands|all] [--only help,sql,...] [--elephant PATH]
        [--out benchmarks/results/startup.json]

embedded (the default): each run uses a fresh temporary data dir. "cold" is the first
Database.open() on an empty data dir (initdb, start, CREATE DATABASE, migrations, pool);
"warm" is Database.open() after a clean stop (start + checks + pool); "adopt" is
Database.open() while another handle keeps the server running; "server_*" time
EmbeddedPostgres.start() alone.

commands: wall time of `elephant ...` as subprocesses on a fresh data dir (initialised
first, untimed), each --runs times: `--help`; `sql -c 'select 1'`, `doctor` and `search`
with no server running (each starts and stops the embedded server, and search loads the
model); `mcp` (stdio) until `initialize` is answered, and until `tools/list` is; then
with `elephant serve` running (model loaded): `search`, `doctor`, `sql -c` again. The
machine's load average is recorded with them (a busy 2-core machine doubles them).

`--smoke` is one run (with --mode commands, add --only to pick commands). `--elephant`
times another build's command (e.g. a wrapper running an older checkout).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from app.config import Settings
from app.db import Database
from app.db.embedded import EmbeddedPostgres
from app.services.ops import server_link

ELEPHANT = str(Path(sys.executable).parent / "elephant")
QUERY = "where did the staging database move"
# The targets on a 2-core machine, seconds.
TARGETS = {"help": 1.0, "mcp_initialize": 2.0, "search_server": 1.5, "doctor": 5.0}
COMMANDS = (
    "help",
    "sql",
    "doctor",
    "search_local",
    "mcp_initialize",
    "mcp_tools_list",
    "search_server",
    "doctor_server",
    "sql_server",
)


def timed_open(settings: Settings) -> tuple[float, Database]:
    started = time.perf_counter()
    db = Database(settings)
    db.open()
    return time.perf_counter() - started, db


def one_run() -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="elephant-bench-") as tmp:
        settings = Settings.model_validate({"data_dir": tmp})
        cold, db = timed_open(settings)
        db.close()
        warm, db = timed_open(settings)
        adopt, other = timed_open(settings)
        other.close()
        db.close()
        server = EmbeddedPostgres(Path(tmp) / "embedded")
        started = time.perf_counter()
        server.start()
        server_warm = time.perf_counter() - started
        server.release()
        return {
            "cold_open_s": cold,
            "warm_open_s": warm,
            "adopt_open_s": adopt,
            "server_warm_start_s": server_warm,
        }


# ------------------------------------------------------------------ commands


def _environment(data_dir: str) -> dict[str, str]:
    return {**os.environ, "ELEPHANT_DATA_DIR": data_dir, "ELEPHANT_WORKER_ENABLED": "false"}


def _run(env: dict[str, str], *args: str) -> float:
    """Seconds until `elephant ARGS` exited (doctor may exit 1 on a failed check)."""
    started = time.perf_counter()
    result = subprocess.run([ELEPHANT, *args], env=env, capture_output=True, text=True, timeout=600)
    took = time.perf_counter() - started
    if result.returncode not in (0, 1) or (result.returncode == 1 and args[0] != "doctor"):
        raise SystemExit(f"elephant {' '.join(args)} failed:\n{result.stderr[-2000:]}")
    return took


def _mcp(env: dict[str, str]) -> tuple[float, float]:
    """Seconds until `elephant mcp` answered initialize, and until it answered tools/list."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [ELEPHANT, "mcp"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines: queue.Queue[bytes] = queue.Queue()
    stdout = proc.stdout
    threading.Thread(
        target=lambda: [lines.put(line) for line in iter(stdout.readline, b"")], daemon=True
    ).start()

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        proc.stdin.flush()

    try:
        send(
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "benchmark", "version": "1"},
                },
            }
        )
        lines.get(timeout=120)
        initialized = time.perf_counter() - started
        send({"method": "notifications/initialized"})
        send({"id": 2, "method": "tools/list"})
        lines.get(timeout=300)
        listed = time.perf_counter() - started
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return initialized, listed


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _serving(data_dir: str, env: dict[str, str]) -> Iterator[None]:
    """`elephant serve` on a free port, once its link answers and its model is loaded."""
    proc = subprocess.Popen(
        [ELEPHANT, "serve", "--host", "127.0.0.1", "--port", str(_free_port())],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    settings = Settings.model_validate({"data_dir": data_dir})
    try:
        deadline = time.monotonic() + 300
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"elephant serve exited with {proc.returncode}")
            if time.monotonic() > deadline:
                raise SystemExit("elephant serve did not publish its link within 300 s")
            link = server_link.find(settings)
            if link is not None and link.pid == proc.pid:
                try:  # the first search waits for the server's model: not part of the timings
                    server_link.call(link, "POST", "/search", tenant="bench", body={"query": "x"})
                    break
                except server_link.LinkUnavailable:
                    pass
            time.sleep(0.2)
        yield
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def command_runs(runs: int, only: set[str]) -> dict[str, list[float]]:
    """Every chosen command's wall times, seconds."""
    timings: dict[str, list[float]] = {name: [] for name in COMMANDS if name in only}

    def measure(name: str, fn: Callable[[], float]) -> None:
        if name in timings:
            for _ in range(runs):
                timings[name].append(fn())

    with tempfile.TemporaryDirectory(prefix="elephant-bench-cli-") as tmp:
        env = _environment(tmp)
        _run(env, "sql", "-c", "select 1")  # initdb and migrations: not timed
        measure("help", lambda: _run(env, "--help"))
        measure("sql", lambda: _run(env, "sql", "-c", "select 1"))
        measure("doctor", lambda: _run(env, "doctor"))
        measure("search_local", lambda: _run(env, "search", QUERY))
        if {"mcp_initialize", "mcp_tools_list"} & only:
            for _ in range(runs):
                initialized, listed = _mcp(env)
                if "mcp_initialize" in timings:
                    timings["mcp_initialize"].append(initialized)
                if "mcp_tools_list" in timings:
                    timings["mcp_tools_list"].append(listed)
        if {"search_server", "doctor_server", "sql_server"} & only:
            with _serving(tmp, env):
                measure("search_server", lambda: _run(env, "search", QUERY))
                measure("doctor_server", lambda: _run(env, "doctor"))
                measure("sql_server", lambda: _run(env, "sql", "-c", "select 1"))
    return timings


# ------------------------------------------------------------------ report


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
    }


def _table(title: str, summary: dict[str, dict[str, float]], targets: dict[str, float]) -> None:
    print(title)
    print(f"{'measure':<22}{'median s':>10}{'min s':>10}{'max s':>10}{'target s':>10}")
    for key, stats in summary.items():
        target = targets.get(key)
        mark = (
            "" if target is None else f"{target:>10}{'' if stats['median'] < target else '  over'}"
        )
        print(f"{key:<22}{stats['median']:>10}{stats['min']:>10}{stats['max']:>10}{mark}")


def main() -> None:
    global ELEPHANT  # one setting for the helpers above
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="one run")
    parser.add_argument("--mode", choices=("embedded", "commands", "all"), default="embedded")
    parser.add_argument(
        "--only", default=",".join(COMMANDS), help=f"commands to time: {', '.join(COMMANDS)}"
    )
    parser.add_argument("--elephant", default=ELEPHANT, help="the elephant command to time")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/startup.json"))
    args = parser.parse_args()
    ELEPHANT = args.elephant
    if args.smoke:
        args.runs = 1
    only = {name.strip() for name in args.only.split(",") if name.strip()}
    unknown = only - set(COMMANDS)
    if unknown:
        parser.error(f"unknown commands {sorted(unknown)}: choose from {', '.join(COMMANDS)}")
    result: dict[str, Any] = {
        "smoke": args.smoke,
        "runs": args.runs,
        "mode": args.mode,
        "cpus": os.cpu_count(),
        "load_avg_before": [round(value, 2) for value in os.getloadavg()],
    }
    if args.mode in ("embedded", "all"):
        runs = [one_run() for _ in range(args.runs)]
        result["seconds"] = {key: _summary([run[key] for run in runs]) for key in runs[0]}
    if args.mode in ("commands", "all"):
        timings = command_runs(args.runs, only)
        result["commands"] = {name: _summary(values) for name, values in timings.items()}
        result["targets"] = TARGETS
    result["load_avg_after"] = [round(value, 2) for value in os.getloadavg()]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    if "seconds" in result:
        _table("embedded server", result["seconds"], {})
    if "commands" in result:
        _table("commands (wall time of the subprocess)", result["commands"], TARGETS)
    print(f"load average before {result['load_avg_before']}, after {result['load_avg_after']}")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
