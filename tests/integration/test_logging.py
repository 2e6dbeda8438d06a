"""One logging set-up (app.logs): JSON lines that carry the request id of the request they
belong to; one format for the app, uvicorn and fastmcp, also from `elephant serve` in a
process of its own; an expected MCP not-found as one line without a traceback; MCP
requests in the access log as `POST /mcp` with their tool; access lines by route
template, so a subject's name in a URL is in no log file after its erasure."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import random
import signal
import string
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from app import logs
from app.api import create_app
from app.config import Settings
from app.db import Database
from app.db.embedded import EmbeddedPostgres
from app.mcp.server import build_server
from app.providers.embedder import Embedder
from app.services.runtime import Elephant
from tests.conftest import (
    free_port,
    make_settings,
    operator_key,
    refusable_database,
    serve_in_thread,
)

ELEPHANT = str(Path(sys.executable).parent / "elephant")


@contextmanager
def captured(settings: Settings) -> Iterator[io.StringIO]:
    """configure_logging onto a buffer for the block; the process's logging as it was after."""
    root = logging.getLogger()
    level = root.level
    saved_env = os.environ.get("FASTMCP_LOG_ENABLED")
    buffer = io.StringIO()
    logs.configure_logging(settings, stream=buffer)
    try:
        yield buffer
    finally:
        for handler in [h for h in root.handlers if isinstance(h, logs._ElephantHandler)]:
            root.removeHandler(handler)
        root.setLevel(level)
        for name in logs.CHATTY_LOGGERS:
            logging.getLogger(name).setLevel(logging.NOTSET)
        if saved_env is None:
            os.environ.pop("FASTMCP_LOG_ENABLED", None)
        else:
            os.environ["FASTMCP_LOG_ENABLED"] = saved_env


@contextmanager
def served(settings: Settings, elephant: Elephant) -> Iterator[str]:
    """The API served by uvicorn on 127.0.0.1 in a thread, as `elephant serve` runs it."""
    with serve_in_thread(
        create_app(settings, elephant), log_level=settings.log.level.lower(), log_config=None
    ) as url:
        yield url


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def wait_for_line(buffer: io.StringIO, predicate: Callable[[str], bool], what: str) -> str:
    """uvicorn writes the access line as the response starts: the client may see the
    answer a moment before the line is in the buffer."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in buffer.getvalue().splitlines():
            if predicate(line):
                return line
        time.sleep(0.02)
    pytest.fail(f"no log line {what} within 10 s; got:\n{buffer.getvalue()}")


@contextmanager
def elephant_serve(settings: Settings, tmp_path: Path, **env: str) -> Iterator[str]:
    """`elephant serve` in a process of its own on this module's database, its stdout and
    stderr (the log) written to tmp_path/stdout.log and stderr.log; yields its base URL and
    stops it with SIGTERM."""
    port = free_port()
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ELEPHANT_")},
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
        **env,
    }
    stderr_path = tmp_path / "stderr.log"
    with stderr_path.open("w") as stderr, (tmp_path / "stdout.log").open("w") as stdout:
        process = subprocess.Popen(
            [ELEPHANT, "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=environment,
            stdout=stdout,
            stderr=stderr,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 120
            while True:
                assert process.poll() is None, stderr_path.read_text()
                assert time.monotonic() < deadline, "elephant serve did not answer in 120 s"
                try:
                    if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.2)
            yield base
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)


# ------------------------------------------------------------------ request ids (JSON)


@pytest.fixture
def outage(
    pg_server: EmbeddedPostgres, new_database: Callable[..., str], settings: Settings
) -> Iterator[tuple[Settings, Database, Callable[[bool], None]]]:
    """A database of its own that can refuse every connection (an outage to log about)."""
    with refusable_database(
        pg_server,
        new_database,
        settings,
        "logging_outage",
        metrics={"public": True},
        log={"format": "json"},
        worker={"enabled": False},
    ) as found:
        yield found


def test_json_lines_carry_the_request_id_of_their_request(
    outage: tuple[Settings, Database, Callable[[bool], None]], embedder: Embedder
) -> None:
    own, database, refuse = outage
    elephant = Elephant(settings=own, db=database, embedder=embedder, llm=None)
    with captured(own) as buffer, served(own, elephant) as url:
        refuse(True)
        answer = httpx.get(f"{url}/metrics", headers={"X-Request-Id": "scrape-1"}, timeout=30)
        assert answer.status_code == 200
        assert answer.headers["x-request-id"] == "scrape-1"
        wait_for_line(buffer, lambda line: "GET /metrics 200" in line, "for GET /metrics")
        lost = httpx.get(f"{url}/no/such/path", timeout=30)
        assert lost.status_code == 404
        wait_for_line(buffer, lambda line: "GET unmatched 404" in line, "for the unmatched path")
    lines = json_lines(buffer.getvalue())  # every line is one JSON object
    for entry in lines:
        assert {"ts", "level", "logger", "message"} <= entry.keys(), entry
    mine = [entry for entry in lines if entry.get("request_id") == "scrape-1"]
    loggers = {entry["logger"] for entry in mine}
    # The app's own line (inside the request's worker thread) and the access line.
    assert "app.services.ops.metrics" in loggers, mine
    assert "app.access" in loggers, mine
    warning = next(e for e in mine if e["logger"] == "app.services.ops.metrics")
    assert warning["level"] == "WARNING" and "job queue" in warning["message"]
    # A path no route matched still gets its id on the access line, and is not written.
    unmatched = next(e for e in lines if e["message"].startswith("GET unmatched 404"))
    assert unmatched["request_id"] == lost.headers["x-request-id"]
    assert "/no/such/path" not in buffer.getvalue()
    assert "uvicorn.access" not in buffer.getvalue()  # uvicorn's own line is dropped
    # Lines outside any request carry no id (start-up, shutdown).
    assert any("request_id" not in entry for entry in lines)


# ------------------------------------------------------------------ one format, own process


def test_elephant_serve_writes_one_format_on_stderr(
    settings: Settings, db: Database, tmp_path: Path
) -> None:
    key = operator_key(db, "format check")
    with elephant_serve(
        settings, tmp_path, ELEPHANT_LOG_FORMAT="json", ELEPHANT_WORKER_ENABLED="false"
    ) as base:
        headers = {"Authorization": f"Bearer {key}", "X-Request-Id": "fmt-1"}
        assert httpx.get(f"{base}/metrics", headers=headers, timeout=30).status_code == 200
        assert httpx.get(f"{base}/metrics", timeout=30).status_code == 401
    text = (tmp_path / "stderr.log").read_text()
    entries = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            entries.append(json.loads(line))
        except ValueError:
            pytest.fail(f"a stderr line is not JSON: {line!r}\n{text}")
    loggers = {entry["logger"] for entry in entries}
    assert {"uvicorn.error", "app.access"} <= loggers, loggers
    assert "uvicorn.access" not in loggers  # turned off: the app writes its own
    # the CLI's own notice is a log line too
    assert any(e["logger"] == "app.cli" and e["message"].startswith("auth: ") for e in entries)
    access = [e for e in entries if e["logger"] == "app.access" and "/metrics" in e["message"]]
    assert any(e.get("request_id") == "fmt-1" for e in access), access
    assert all("Traceback" not in entry["message"] for entry in entries)


# ------------------------------------------------------------------ nothing to erase in a log


def test_no_log_file_keeps_what_a_request_said_about_an_erased_subject(
    settings: Settings, db: Database, tmp_path: Path
) -> None:
    """`elephant serve` at its default log settings: a note naming someone, a search for
    them in the URL (`GET /search?q=where+does+<name>+work`), a memory read by its id, then
    the subject erased. The name and the id are in none of the files the server writes
    (its log on stderr, its stdout, the embedded Postgres server's log); the access log
    still has each request, by route template, with its status."""
    canary = "Quill" + "".join(random.choices(string.ascii_lowercase, k=8))
    key = operator_key(db, "erasure log check")
    tenant = "log-erasure"
    headers = {"Authorization": f"Bearer {key}", "X-Elephant-Tenant": tenant}
    with (
        elephant_serve(settings, tmp_path) as base,
        httpx.Client(base_url=base, headers=headers, timeout=120) as client,
    ):
        note = {"text": f"{canary} works at the harbour aquarium as a marine biologist."}
        stored = client.post("/commit", params={"wait": "true"}, json=note)
        assert stored.status_code == 201 and stored.json()["status"] == "stored", stored.text
        memory_id = stored.json()["memory_id"]
        found = client.get(f"/search?q=where+does+{canary}+work")
        assert found.status_code == 200 and canary in found.text, found.text
        assert client.get(f"/memories/{memory_id}").status_code == 200
        erased = client.post("/erase", json={"subject": canary})
        assert erased.status_code == 200 and erased.json()["removed"]["memories"] == 1, erased.text
        gone = client.get("/search", params={"query": f"where does {canary} work"})
        assert gone.status_code == 200 and gone.json()["count"] == 0, gone.text
    files = [tmp_path / "stderr.log", tmp_path / "stdout.log"]
    files.append(settings.data_dir / "embedded" / "postgres.log")
    for path in files:
        text = path.read_text(errors="replace")
        assert canary.lower() not in text.lower(), f"{path} names the erased subject"
        assert memory_id not in text, f"{path} has the memory's id"
    log = files[0].read_text()
    access = [line for line in log.splitlines() if " app.access " in line]
    for expected in (
        "POST /commit 201",
        "GET /search 200",
        "GET /memories/{memory_id} 200",
        "POST /erase 200",
    ):
        assert any(f": {expected} " in line for line in access), (expected, log)
    assert all("request_id=" in line for line in access), access
    assert "uvicorn.access" not in log and "where+does" not in log


# ------------------------------------------------------------------ MCP


def test_an_mcp_resource_not_found_logs_one_line(settings: Settings, elephant: Elephant) -> None:
    server = build_server(settings, lambda: elephant)
    text = make_settings(settings.data_dir, log={"level": "INFO"})

    async def read() -> None:
        async with Client(server) as client:
            await client.read_resource("elephant://handoff/nothing-here")

    with captured(text) as buffer, pytest.raises(Exception, match="not_found"):
        asyncio.run(read())
    lines = [line for line in buffer.getvalue().splitlines() if line.strip()]
    about = [line for line in lines if "nothing-here" in line]
    assert len(about) == 1, lines
    assert "not_found" in about[0] and "INFO" in about[0], about
    assert "Traceback" not in buffer.getvalue(), buffer.getvalue()


def test_mcp_requests_in_the_access_log_name_the_path_and_tool(
    settings: Settings, elephant: Elephant
) -> None:
    key = operator_key(elephant.db, "mcp access log")

    async def search(url: str) -> None:
        headers = {"Authorization": f"Bearer {key}", "X-Elephant-Tenant": "mcp-log"}
        async with Client(StreamableHttpTransport(url, headers=headers)) as client:
            await client.call_tool("search", {"query": "importer language"})

    with captured(settings) as buffer, served(settings, elephant) as base:
        asyncio.run(search(f"{base}/mcp"))
        line = wait_for_line(
            buffer, lambda line: "tool=search" in line and "app.access" in line, "with the tool"
        )
    assert ": POST /mcp 200 " in line, line
    assert "rpc=tools/call" in line and "request_id=" in line, line
    assert "POST / " not in buffer.getvalue()
