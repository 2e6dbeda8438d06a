"""Start-up: what the CLI and `elephant mcp` load before they answer, and the CLI's way to a
running `elephant serve` (app/services/ops/server_link.py).

Real processes throughout: the CLI and the MCP server run as subprocesses, `elephant serve`
on a free 127.0.0.1 port on this module's database. Whether the model was loaded is read
from the process itself (its memory maps, or sys.modules printed by a harness), not
inferred from timings; so is which runtime runs it: onnxruntime, never torch (the extra
`torch` only exports the model).
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from app.api import create_app
from app.config import Settings
from app.services.memory.commit import commit_note
from app.services.memory.schemas import NoteIn
from app.services.ops import server_link
from app.services.runtime import Elephant
from tests.conftest import free_port

ELEPHANT = str(Path(sys.executable).parent / "elephant")
ROOT = Path(__file__).parents[2]
HEAVY = ("torch", "transformers", "onnxruntime", "litestar", "fastmcp", "anthropic", "ollama")
TENANT = "startup"
NOTE = "The staging database moved to the Frankfurt region in March."
# Runs a CLI command in a fresh interpreter, then reports which heavy modules it imported.
HARNESS = """
import json, sys
from app.cli import main
try:
    main(sys.argv[1:], standalone_mode=False)
finally:
    loaded = [name for name in ("torch", "transformers", "onnxruntime") if name in sys.modules]
    print("LOADED " + json.dumps(loaded), file=sys.stderr)
"""


def environment(settings: Settings, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
        "ELEPHANT_WORKER_ENABLED": "false",
        **extra,
    }


def cli(settings: Settings, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run `elephant ARGS` through the harness: the result and the heavy modules it loaded."""
    result = subprocess.run(
        [sys.executable, "-c", HARNESS, *args],
        env=environment(settings),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    reports = [line for line in result.stderr.splitlines() if line.startswith("LOADED ")]
    assert reports, f"the harness did not report\n{result.stdout}\n{result.stderr}"
    return result, json.loads(reports[-1].removeprefix("LOADED "))


@pytest.fixture(scope="module")
def noted(elephant: Elephant) -> str:
    """One note in the tenant the CLI searches."""
    result = commit_note(elephant, TENANT, NoteIn(text=NOTE, force=True))
    assert result.memory_id is not None, result
    return str(result.memory_id)


# ------------------------------------------------------------------ imports


def test_importing_the_cli_loads_no_heavy_module() -> None:
    """`elephant --help` and every command's parsing import only click and the settings:
    torch, the web framework, fastmcp and the LLM clients come with the command that uses them."""
    code = "import json, sys, app.cli; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    modules = set(json.loads(result.stdout))
    assert "app.cli" in modules and "click" in modules  # the check sees what was imported
    assert [name for name in HEAVY if name in modules] == []
    assert "app.services.runtime" not in modules


def test_help_lists_the_verbose_option() -> None:
    result = subprocess.run([ELEPHANT, "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "-v, --verbose" in result.stdout


# ------------------------------------------------------------------ MCP over stdio


class Lines:
    """A subprocess's output lines, read by a thread so a wait can be bounded."""

    def __init__(self, stream: Any) -> None:
        self._queue: queue.Queue[bytes] = queue.Queue()
        self._seen: list[dict[str, Any]] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: Any) -> None:
        for line in iter(stream.readline, b""):
            self._queue.put(line)

    def answer(self, request_id: int, timeout_s: float, what: str) -> dict[str, Any]:
        """The response to one request: the server handles requests concurrently, so
        answers (and notifications) may arrive in any order; the others are kept."""
        deadline = time.monotonic() + timeout_s
        while True:
            for index, message in enumerate(self._seen):
                if message.get("id") == request_id:
                    return self._seen.pop(index)
            left = deadline - time.monotonic()
            if left <= 0:
                pytest.fail(f"no answer to {what} within {timeout_s:.0f} s; got {self._seen}")
            try:
                self._seen.append(dict(json.loads(self._queue.get(timeout=left))))
            except queue.Empty:
                continue


def runtimes_mapped(pid: int) -> set[str]:
    """The model runtimes whose shared libraries are in the process: onnxruntime's
    (onnxruntime/capi/*.so, mapped when the embedding model loads) and torch's (libtorch*,
    which must stay out: the default runtime is onnx)."""
    found = set()
    for region in psutil.Process(pid).memory_maps():
        name = Path(region.path).name
        if name.startswith("libtorch"):
            found.add("torch")
        elif "/onnxruntime/capi/" in region.path and ".so" in name:
            found.add("onnxruntime")
    return found


def test_mcp_stdio_answers_initialize_before_loading_the_model(
    settings: Settings, noted: str
) -> None:
    """initialize is answered with nothing heavy loaded; tools, database and model follow in
    the background, and a search after them finds the note."""
    proc = subprocess.Popen(
        [ELEPHANT, "mcp"],
        env=environment(settings, ELEPHANT_MCP_TENANT=TENANT),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines = Lines(proc.stdout)

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        proc.stdin.flush()

    try:
        started = time.monotonic()
        send(
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "test_startup", "version": "1"},
                },
            }
        )
        answer = lines.answer(1, 20, "initialize")
        answered_in = time.monotonic() - started
        assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "elephant", answer
        assert not runtimes_mapped(proc.pid), "the model was loaded before initialize was answered"

        send({"method": "notifications/initialized"})
        send({"id": 2, "method": "tools/list"})
        tools = lines.answer(2, 120, "tools/list")["result"]["tools"]
        assert "search" in {tool["name"] for tool in tools}
        send(
            {
                "id": 3,
                "method": "tools/call",
                "params": {"name": "search", "arguments": {"query": "Frankfurt staging database"}},
            }
        )
        found = lines.answer(3, 180, "tools/call search")["result"]
        assert not found.get("isError"), found
        hits = found["structuredContent"]["results"]
        assert [hit["text"] for hit in hits][:1] == [NOTE], hits
        assert runtimes_mapped(proc.pid) == {"onnxruntime"}, "the model runs on onnxruntime"
        print(f"initialize answered in {answered_in:.2f} s")
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0


def test_mcp_stdio_reports_a_failed_start_to_the_tool_calls(settings: Settings) -> None:
    """A database that cannot be opened does not stop initialize nor the tool listing; a
    tool call then says why."""
    env = environment(settings, ELEPHANT_DATABASE_URL="postgresql://nobody@127.0.0.1:1/none")
    proc = subprocess.Popen(
        [ELEPHANT, "mcp"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines = Lines(proc.stdout)
    try:
        for message in (
            {"id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}},
            {"method": "notifications/initialized"},
            {"id": 2, "method": "tools/list"},
            {"id": 3, "method": "tools/call",
             "params": {"name": "search", "arguments": {"query": "anything"}}},
        ):  # fmt: skip
            proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        proc.stdin.flush()
        assert "result" in lines.answer(1, 20, "initialize")
        assert "search" in {
            tool["name"] for tool in lines.answer(2, 120, "tools/list")["result"]["tools"]
        }
        called = lines.answer(3, 120, "tools/call")
        assert called["result"]["isError"] is True, called
        text = called["result"]["content"][0]["text"]
        assert "Elephant could not start" in text and "connect" in text, text
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ------------------------------------------------------------------ CLI → running server


@pytest.fixture(scope="class")
def served(settings: Settings, noted: str) -> Iterator[server_link.Link]:
    """`elephant serve` (API keys on) on a free loopback port; its link, once it answers."""
    port = free_port()
    proc = subprocess.Popen(
        [ELEPHANT, "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=environment(settings),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    link = None
    while link is None or not _answers(link):
        if proc.poll() is not None:
            pytest.fail(f"elephant serve exited with {proc.returncode}\n{proc.stderr.read()}")  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "elephant serve did not answer within 120 s"
        time.sleep(0.2)
        link = server_link.find(settings)
        if link is not None and link.pid != proc.pid:
            link = None
    assert link.url == f"http://127.0.0.1:{port}"
    try:
        yield link
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr.read()  # type: ignore[union-attr]
    assert server_link.find(settings) is None
    assert not (settings.data_dir / server_link.LINK_FILE).exists(), "the link file outlived it"


def _answers(link: server_link.Link) -> bool:
    try:
        return httpx.get(f"{link.url}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


class TestWithARunningServer:
    """One `elephant serve` for these tests; stopped (and its link file checked) after them."""

    def test_link_file_is_private_and_names_this_server(
        self, settings: Settings, served: server_link.Link
    ) -> None:
        path = settings.data_dir / server_link.LINK_FILE
        assert path.stat().st_mode & 0o777 == 0o600
        assert served.token.startswith(server_link.TOKEN_PREFIX) and len(served.token) > 40
        assert served.database == server_link.fingerprint(settings)
        other = settings.model_copy(
            update={"embedded": settings.embedded.model_copy(update={"database": "another"})}
        )
        assert server_link.find(other) is None, "a CLI on another database must not borrow it"

    def test_cli_search_is_answered_by_the_running_server(
        self, settings: Settings, served: server_link.Link
    ) -> None:
        started = time.monotonic()
        result, loaded = cli(settings, "-v", "search", "Frankfurt staging", "--tenant", TENANT)
        took = time.monotonic() - started
        assert result.returncode == 0, result.stderr
        assert f"answered by the server at {served.url}" in result.stderr
        assert loaded == [], "the CLI loaded the model although the server answered"
        answer = json.loads(result.stdout)
        assert [hit["text"] for hit in answer["results"]][:1] == [NOTE]
        print(f"elephant search via the server: {took:.2f} s")

        graph, loaded = cli(settings, "graph", "search", "Frankfurt", "--tenant", TENANT)
        assert graph.returncode == 0, graph.stderr
        assert loaded == [] and "entities" in json.loads(graph.stdout)

    def test_doctor_checks_the_model_without_loading_it(
        self, settings: Settings, served: server_link.Link
    ) -> None:
        result, loaded = cli(settings, "doctor")
        assert "status:" in result.stdout, result.stdout + result.stderr
        lines = {}  # check name -> detail, from "ok    name: detail"
        for line in result.stdout.splitlines():
            name, found, detail = line.split(None, 1)[-1].partition(": ")
            if found:
                lines[name] = detail
        assert "files checked" in lines["embedder"], lines
        assert lines["server"].startswith(f"{served.url} (pid {served.pid})"), lines
        assert loaded == [], "the doctor loaded the model"

    def test_a_refused_request_is_the_servers_message(
        self, settings: Settings, served: server_link.Link
    ) -> None:
        result, loaded = cli(settings, "search", "x" * 20001, "--tenant", TENANT)
        assert result.returncode != 0
        assert "query" in result.stderr and "20000" in result.stderr, result.stderr
        assert loaded == []

    def test_the_link_token_is_the_only_way_in_without_a_key(
        self, served: server_link.Link
    ) -> None:
        """API keys are on: the published token works, a wrong or missing one is refused."""
        body = {"query": "Frankfurt"}
        headers = {"X-Elephant-Tenant": TENANT}
        right = httpx.post(
            f"{served.url}/search",
            json=body,
            headers={**headers, "Authorization": f"Bearer {served.token}"},
            timeout=120,
        )
        assert right.status_code == 200, right.text
        wrong = httpx.post(
            f"{served.url}/search",
            json=body,
            headers={**headers, "Authorization": f"Bearer {served.token[:-4]}abcd"},
            timeout=30,
        )
        absent = httpx.post(f"{served.url}/search", json=body, headers=headers, timeout=30)
        assert (wrong.status_code, absent.status_code) == (401, 401), (wrong.text, absent.text)
        admin = httpx.get(
            f"{served.url}/jobs",
            headers={**headers, "Authorization": f"Bearer {served.token}"},
            timeout=30,
        )
        assert admin.status_code == 403, admin.text  # read and write only, never admin

    def test_the_server_embeds_on_onnxruntime_without_torch(self, served: server_link.Link) -> None:
        """After a search (the query embedded by the server itself), onnxruntime is in the
        server's process and torch is not, although this venv has it."""
        response = httpx.post(
            f"{served.url}/search",
            json={"query": "the region the staging database moved to"},
            headers={"X-Elephant-Tenant": TENANT, "Authorization": f"Bearer {served.token}"},
            timeout=120,
        )
        assert response.status_code == 200, response.text
        assert [hit["text"] for hit in response.json()["results"]][:1] == [NOTE]
        assert runtimes_mapped(served.pid) == {"onnxruntime"}


def test_the_link_token_is_refused_from_a_non_loopback_peer(
    settings: Settings, elephant: Elephant
) -> None:
    token = server_link.TOKEN_PREFIX + "x" * 43
    app = create_app(settings, elephant, link_token=token)

    async def status_from(peer: str) -> int:
        transport = httpx.ASGITransport(app=app, client=(peer, 50000))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            response = await client.post(
                "/search",
                json={"query": "Frankfurt"},
                headers={"Authorization": f"Bearer {token}", "X-Elephant-Tenant": TENANT},
            )
            return response.status_code

    assert asyncio.run(status_from("127.0.0.1")) == 200
    assert asyncio.run(status_from("203.0.113.7")) == 401


# ------------------------------------------------------------------ fallback


@pytest.fixture
def link_file(settings: Settings) -> Iterator[Path]:
    path = settings.data_dir / server_link.LINK_FILE
    assert not path.exists()
    yield path
    path.unlink(missing_ok=True)


def _fake_link(settings: Settings, pid: int, created: float, port: int) -> dict[str, Any]:
    link = server_link.Link(
        url=f"http://127.0.0.1:{port}",
        pid=pid,
        created=created,
        database=server_link.fingerprint(settings),
        token=server_link.TOKEN_PREFIX + "stale",
    )
    return asdict(link)


def test_stale_link_files_are_ignored(settings: Settings, link_file: Path) -> None:
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    link_file.write_text(json.dumps(_fake_link(settings, ended.pid, time.time(), free_port())))
    assert server_link.find(settings) is None  # its process is gone
    me = psutil.Process()
    link_file.write_text(json.dumps(_fake_link(settings, me.pid, me.create_time() - 60, 1)))
    assert server_link.find(settings) is None  # the pid was reused by another process
    link_file.write_text("{not json")
    assert server_link.find(settings) is None


def test_cli_search_works_in_process_when_the_server_does_not_answer(
    settings: Settings, noted: str, link_file: Path
) -> None:
    """A link file whose process lives but whose port takes nothing: the CLI loads the model
    itself and answers."""
    me = psutil.Process()
    link_file.write_text(json.dumps(_fake_link(settings, me.pid, me.create_time(), free_port())))
    assert server_link.find(settings) is not None
    result, loaded = cli(settings, "-v", "search", "Frankfurt staging", "--tenant", TENANT)
    assert result.returncode == 0, result.stderr
    assert "working in-process" in result.stderr
    assert loaded == ["onnxruntime"], "without a server the CLI embeds the query itself"
    assert [hit["text"] for hit in json.loads(result.stdout)["results"]][:1] == [NOTE]


def test_cli_search_without_a_server_is_quiet(settings: Settings, noted: str) -> None:
    """No adoption, migration or link lines on stderr unless -v."""
    result, loaded = cli(settings, "search", "Frankfurt staging", "--tenant", TENANT)
    assert result.returncode == 0, result.stderr
    noise = [line for line in result.stderr.splitlines() if not line.startswith("LOADED ")]
    assert noise == [], noise
    assert loaded == ["onnxruntime"], "the query is embedded on onnxruntime, without torch"


# ------------------------------------------------------------------ benchmark


def test_startup_benchmark_times_commands(tmp_path: Path) -> None:
    """benchmarks/startup.py --mode commands (a smoke of two commands) writes its numbers."""
    out = tmp_path / "startup.json"
    result = subprocess.run(
        [sys.executable, "benchmarks/startup.py", "--mode", "commands", "--smoke",
         "--only", "help,mcp_initialize", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["smoke"] is True and "seconds" not in report
    assert set(report["commands"]) == {"help", "mcp_initialize"}
    for stats in report["commands"].values():
        assert 0 < stats["min"] <= stats["median"] <= stats["max"] < 120, stats
    assert report["targets"]["mcp_initialize"] == 2.0
