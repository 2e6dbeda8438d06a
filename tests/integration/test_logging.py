"""One logging set-up (app.logs): JSON lines that carry the request id of the request they
belong to; one format for the app, uvicorn and fastmcp, also from `elephant serve` in a
process of its own; an expected MCP not-found as one line without a traceback; MCP
requests in the access log as `POST /mcp` with their tool."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import signal
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
        wait_for_line(buffer, lambda line: "GET /metrics" in line, "for GET /metrics")
        lost = httpx.get(f"{url}/no/such/path", timeout=30)
        assert lost.status_code == 404
        wait_for_line(buffer, lambda line: "/no/such/path" in line, "for the unmatched path")
    lines = json_lines(buffer.getvalue())  # every line is one JSON object
    for entry in lines:
        assert {"ts", "level", "logger", "message"} <= entry.keys(), entry
    mine = [entry for entry in lines if entry.get("request_id") == "scrape-1"]
    loggers = {entry["logger"] for entry in mine}
    # The app's own line (inside the request's worker thread) and uvicorn's access line.
    assert "app.services.ops.metrics" in loggers, mine
    assert "uvicorn.access" in loggers, mine
    warning = next(e for e in mine if e["logger"] == "app.services.ops.metrics")
    assert warning["level"] == "WARNING" and "job queue" in warning["message"]
    # A path no route matched still gets its id on the access line.
    unmatched = next(e for e in lines if "/no/such/path" in e["message"])
    assert unmatched["request_id"] == lost.headers["x-request-id"]
    # Lines outside any request carry no id (start-up, shutdown).
    assert any("request_id" not in entry for entry in lines)


# ------------------------------------------------------------------ one format, own process


def test_elephant_serve_writes_one_format_on_stderr(
    settings: Settings, db: Database, tmp_path: Path
) -> None:
    key = operator_key(db, "format check")
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ELEPHANT_")},
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
        "ELEPHANT_LOG_FORMAT": "json",
        "ELEPHANT_WORKER_ENABLED": "false",
    }
    stderr_path = tmp_path / "stderr.log"
    with stderr_path.open("w") as stderr:
        process = subprocess.Popen(
            [ELEPHANT, "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
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
            headers = {"Authorization": f"Bearer {key}", "X-Request-Id": "fmt-1"}
            assert httpx.get(f"{base}/metrics", headers=headers, timeout=30).status_code == 200
            assert httpx.get(f"{base}/metrics", timeout=30).status_code == 401
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
    text = stderr_path.read_text()
    entries = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            entries.append(json.loads(line))
        except ValueError:
            pytest.fail(f"a stderr line is not JSON: {line!r}\n{text}")
    loggers = {entry["logger"] for entry in entries}
    assert {"uvicorn.error", "uvicorn.access"} <= loggers, loggers
    # the CLI's own notice is a log line too
    assert any(e["logger"] == "app.cli" and e["message"].startswith("auth: ") for e in entries)
    access = [e for e in entries if e["logger"] == "uvicorn.access" and "/metrics" in e["message"]]
    assert any(e.get("request_id") == "fmt-1" for e in access), access
    assert all("Traceback" not in entry["message"] for entry in entries)


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
            buffer, lambda line: "tool=search" in line and "uvicorn.access" in line, "with the tool"
        )
    assert '"POST /mcp HTTP/1.1" 200' in line, line
    assert "rpc=tools/call" in line and "request_id=" in line, line
    assert '"POST / HTTP' not in buffer.getvalue()
