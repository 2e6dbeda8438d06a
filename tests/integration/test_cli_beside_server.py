"""One server per data dir, and the CLI beside it harmless (issue 39, reproductions 4-6).

A real `elephant serve` subprocess on its own data dir and a free port. While it serves,
`elephant export`, `import`, `doctor` and `maintain` run as subprocesses, each with 100
API requests (commit and search) during it: no session of the server is terminated, the
CLI rebuilds no index, and no request fails with a 5xx. To make every command want a
repair, the record of this server start's BM25 rebuild is deleted before each one (as
a probe that finds rows missing would): a command beside a server only reports it.
A second `serve` on the same data dir or port stops at once naming the first, and leaves
its files alone; `doctor` says the API is down when it is.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg
import pytest

from app.db.embedded import EmbeddedPostgres
from tests.conftest import free_port, needs_bm25

pytestmark = [needs_bm25, pytest.mark.slow]

ELEPHANT = str(Path(sys.executable).parent / "elephant")
TENANT = "beside"
REQUESTS = 100  # API requests during each command
TERMINATED = "terminating connection due to administrator command"


def environment(root: Path) -> dict[str, str]:
    return {**os.environ, "ELEPHANT_DATA_DIR": str(root), "ELEPHANT_WORKER_ENABLED": "false"}


@dataclass
class Server:
    root: Path
    port: int
    proc: subprocess.Popen[str]
    output: Path
    url: str = field(init=False)

    def __post_init__(self) -> None:
        self.url = f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.root / "embedded" / "postgres.log"

    def admin(self) -> psycopg.Connection[tuple[object, ...]]:
        server = EmbeddedPostgres(self.root / "embedded")
        return psycopg.connect(server.conninfo(dbname="elephant"), autocommit=True)

    def sessions(self) -> set[int]:
        """Backend pids of the server's own connections (its application_name)."""
        with self.admin() as conn:
            rows = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name LIKE %s",
                (f"elephant {self.proc.pid}.%",),
            ).fetchall()
        return {int(row[0]) for row in rows}  # type: ignore[call-overload]

    def cli(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [ELEPHANT, "-v", *args],
            env=environment(self.root),
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def start_server(root: Path, port: int) -> Server:
    output = root / f"serve-{port}.log"
    proc = subprocess.Popen(
        [ELEPHANT, "serve", "--auth", "local", "--host", "127.0.0.1", "--port", str(port)],
        env=environment(root),
        stdout=output.open("w"),
        stderr=subprocess.STDOUT,
        text=True,
    )
    server = Server(root, port, proc, output)
    deadline = time.monotonic() + 180
    while not answers(server.url):
        if proc.poll() is not None:
            pytest.fail(f"elephant serve exited with {proc.returncode}\n{output.read_text()}")
        assert time.monotonic() < deadline, "elephant serve did not answer within 180 s"
        time.sleep(0.2)
    return server


def stop_server(server: Server) -> None:
    if server.proc.poll() is None:
        server.proc.send_signal(signal.SIGTERM)
        try:
            server.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait()
    EmbeddedPostgres(server.root / "embedded").stop()


def answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("beside")
    served = start_server(root, free_port())
    try:
        with httpx.Client(base_url=served.url, headers={"X-Elephant-Tenant": TENANT}) as client:
            for n in range(40):
                text = f"Note {n}: the harpsichord zq{n}x was tuned in Gdansk."
                answer = client.post("/commit", json={"text": text, "force": True}, timeout=60)
                assert answer.status_code < 300, answer.text
        exported = served.cli("export", "--tenant", TENANT, "--out", str(root / "t.jsonl"))
        assert exported.returncode == 0, exported.stderr
        yield served
    finally:
        stop_server(served)
        print(served.output.read_text()[-3000:])


class Load:
    """REQUESTS API requests (commit, then search, alternately) from a thread."""

    def __init__(self, url: str, tag: str) -> None:
        self.statuses: list[int] = []
        self.errors: list[str] = []
        self._thread = threading.Thread(target=self._run, args=(url, tag), daemon=True)
        self._thread.start()

    def _run(self, url: str, tag: str) -> None:
        with httpx.Client(base_url=url, headers={"X-Elephant-Tenant": TENANT}) as client:
            for n in range(REQUESTS):
                if n % 2 == 0:
                    body = {
                        "text": f"{tag} request {n}: violins zq{tag}{n}y in Torun",
                        "force": True,
                    }
                    path = "/commit"
                else:
                    body, path = {"query": f"violins zq{tag}{n - 1}y"}, "/search"
                try:
                    answer = client.post(path, json=body, timeout=60)
                except httpx.HTTPError as exc:
                    self.errors.append(f"{path}: {exc}")
                    continue
                self.statuses.append(answer.status_code)
                if answer.status_code >= 500:
                    self.errors.append(f"{path} {answer.status_code}: {answer.text[:300]}")

    def join(self) -> None:
        self._thread.join(timeout=600)


def _forget_the_rebuild(server: Server) -> None:
    """As if this server start's BM25 indexes still needed their rebuild."""
    with server.admin() as conn:
        conn.execute("DELETE FROM keyword_index_repairs")


def _log_offset(server: Server) -> int:
    return server.log.stat().st_size


def _log_since(server: Server, offset: int) -> str:
    with server.log.open("rb") as handle:
        handle.seek(offset)
        return handle.read().decode(errors="replace")


COMMANDS = {
    "export": ("export", "--tenant", TENANT, "--out", "{root}/again.jsonl"),
    "import": ("import", "{root}/t.jsonl", "--tenant", "beside-copy", "--new-ids"),
    "doctor": ("doctor",),
    "maintain": ("maintain", "decay", "--tenant", TENANT),
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_cli_command_beside_the_server_leaves_its_sessions_and_indexes_alone(
    server: Server, name: str
) -> None:
    _forget_the_rebuild(server)
    before = server.sessions()
    offset = _log_offset(server)
    load = Load(server.url, name)
    args = [part.format(root=server.root) for part in COMMANDS[name]]
    result = server.cli(*args)
    load.join()
    logged = _log_since(server, offset)
    after = server.sessions()
    with server.admin() as conn:
        rebuilt = conn.execute("SELECT index_name, reason FROM keyword_index_repairs").fetchall()

    print(
        f"{name}: exit {result.returncode}, {len(load.statuses)} requests, "
        f"{len(load.errors)} failed, {logged.count(TERMINATED)} sessions terminated, "
        f"{len(rebuilt)} indexes rebuilt"
    )
    assert "rebuilding BM25 index" not in result.stderr, result.stderr[-3000:]
    assert rebuilt == [], f"{name} rebuilt {rebuilt}"
    assert logged.count(TERMINATED) == 0, logged[-3000:]
    assert before, "the server's sessions carry its application_name"
    assert not (before - after) & _terminated(logged), f"{name} ended server sessions"
    assert len(load.statuses) == REQUESTS and load.errors == [], load.errors[:5]
    if name != "import":  # the import's outcome is another part of issue 39
        assert result.returncode in (0, 1), result.stderr[-3000:]
        assert "Traceback" not in result.stderr, result.stderr[-3000:]
    if name == "doctor":  # the API is up; the missing rebuild record is the server's to fix
        assert f"ok    api: {server.url} (pid {server.proc.pid}) answers /health" in result.stdout
        assert "WARN  bm25 index: " in result.stdout and "elephant serve" in result.stdout
        assert result.returncode == 0, result.stdout


def _terminated(logged: str) -> set[int]:
    """Backend pids the log says were terminated (log_line_prefix '%m [%p] ')."""
    pids = set()
    for line in logged.splitlines():
        if TERMINATED in line and "[" in line:
            pid = line.split("[", 1)[1].split("]", 1)[0]
            if pid.isdigit():
                pids.add(int(pid))
    return pids


def test_the_server_survives_its_sessions_being_terminated(server: Server) -> None:
    """One bad moment is not a 503: the pools replace terminated connections."""
    with server.admin() as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name LIKE %s AND state = 'idle'",
            (f"elephant {server.proc.pid}.%",),
        )
    load = Load(server.url, "terminated")
    load.join()
    assert len(load.statuses) == REQUESTS and load.errors == [], load.errors[:5]


def test_a_second_serve_stops_at_once_and_leaves_the_first_ones_files(server: Server) -> None:
    link = server.root / "server.json"
    published = link.read_text()
    holders = (server.root / "embedded" / "holders.json").read_text()

    started = time.monotonic()
    second = subprocess.run(
        [ELEPHANT, "serve", "--auth", "local", "--port", str(free_port())],
        env=environment(server.root),
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - started
    print(f"a second serve on the same data dir stopped after {took:.2f} s")
    assert second.returncode != 0
    said = second.stderr
    assert f"pid {server.proc.pid}" in said and server.url in said and "--port" in said, said
    assert took < 10, f"the second serve took {took:.1f} s to stop"
    assert "Traceback" not in said, said

    other = server.root.parent / f"{server.root.name}-other"
    started = time.monotonic()
    same_port = subprocess.run(
        [ELEPHANT, "serve", "--auth", "local", "--host", "127.0.0.1", "--port", str(server.port)],
        env=environment(other),
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - started
    print(f"a serve on a taken port stopped after {took:.2f} s")
    assert same_port.returncode != 0
    said = same_port.stderr
    assert f"port {server.port}" in said and "--port" in said, said
    assert f"pid {server.proc.pid}" in said, said
    assert took < 10, f"the serve on a taken port took {took:.1f} s to stop"
    assert not (other / "embedded").exists(), "it started a database before giving up"

    assert link.read_text() == published, "the first server's server.json was touched"
    assert (server.root / "embedded" / "holders.json").read_text() == holders
    assert answers(server.url)
    found = server.cli("search", "harpsichord zq3x", "--tenant", TENANT)
    assert f"answered by the server at {server.url}" in found.stderr, found.stderr[-2000:]


def test_doctor_says_the_api_is_down_when_its_database_was_stopped(server: Server) -> None:
    """Last in this module: it stops the server's database for good."""
    stopped = server.cli("embedded", "stop")
    assert stopped.returncode == 0, stopped.stderr
    deadline = time.monotonic() + 30
    while answers(server.url):
        assert time.monotonic() < deadline, "/health still answers 200"
        time.sleep(0.2)
    assert server.proc.poll() is None, "the server process itself keeps running"
    result = server.cli("doctor")
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"FAIL  api: down: {server.url} (pid {server.proc.pid})"), lines
    assert lines[-1] == "status: fail"
    assert "status: ok" not in result.stdout
    print(json.dumps(lines[:3], indent=2))
