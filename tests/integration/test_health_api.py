from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from litestar.testing import TestClient

from app.config import Settings
from app.db import Database
from app.db.embedded import EmbeddedPostgres
from app.providers.embedder import Embedder
from app.services.runtime import Elephant
from tests.conftest import api_client, free_port


@pytest.fixture(scope="module")
def client(settings: Settings, elephant: Elephant) -> Iterator[TestClient]:  # type: ignore[type-arg]
    with api_client(settings, elephant) as test_client:
        yield test_client


def test_health_reports_database_extensions_schema_and_model(client: TestClient) -> None:  # type: ignore[type-arg]
    response = client.get("/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    database = body["database"]
    assert database["reachable"] is True
    assert database["mode"] == "embedded"
    assert database["server_version"].startswith("18")
    assert database["role"] == "elephant_app"
    assert database["extensions"]["vector"]["version"] == "0.8.1"
    assert database["extensions"]["age"]["version"] == "1.7.0"
    assert database["extensions"]["pg_textsearch"]["version"] == "1.0.0"
    assert database["keyword_search"] == "bm25"
    assert body["schema"]["up_to_date"] is True
    assert body["schema"]["revision"] == body["schema"]["head"]
    assert body["embedding"] == {
        "provider": "local",
        "model": "all-MiniLM-L6-v2",
        "dim": 384,
        "db_model": "all-MiniLM-L6-v2",
        "db_dim": 384,
        "dim_matches": True,
    }


def test_openapi_schema_is_served(client: TestClient) -> None:  # type: ignore[type-arg]
    response = client.get("/schema/openapi.json")
    assert response.status_code == 200
    spec = response.json()
    assert spec["info"]["title"] == "Elephant"
    assert "/health" in spec["paths"]


def test_unknown_route_is_404_json(client: TestClient) -> None:  # type: ignore[type-arg]
    assert client.get("/nope").status_code == 404


def test_health_degrades_while_database_is_down_and_recovers(
    tmp_path: Path, embedder: Embedder
) -> None:
    settings = Settings.model_validate({"data_dir": str(tmp_path)})
    db = Database(settings)
    db.open()
    elephant = Elephant(settings=settings, db=db, embedder=embedder, llm=None)
    try:
        with api_client(settings, elephant) as client:
            assert client.get("/health").json()["status"] == "ok"
            assert db.embedded is not None
            EmbeddedPostgres(db.embedded.root).stop()  # the database goes away under us
            down = client.get("/health")
            assert down.status_code == 503
            assert down.json()["status"] == "unavailable"
            assert down.json()["database"]["reachable"] is False
            db.embedded.start()  # back again: the recovery probe notices, the pool reconnects
            deadline = time.monotonic() + 30
            while client.get("/health").json()["status"] != "ok":
                assert time.monotonic() < deadline, "not recovered within 30 s"
                time.sleep(0.2)
    finally:
        db.close()
        EmbeddedPostgres(tmp_path / "embedded").stop()


def test_elephant_serve_over_real_http_then_sigterm_stops_postgres(tmp_path: Path) -> None:
    """The server's output goes to a file, never an unread pipe: a full pipe blocks the
    server, and reading a pipe of a live process blocks the test."""
    port = free_port()
    elephant = Path(sys.executable).parent / "elephant"
    env = {**os.environ, "ELEPHANT_DATA_DIR": str(tmp_path), "ELEPHANT_SERVER_PORT": str(port)}
    log_path = tmp_path / "serve.log"
    with log_path.open("w") as log_file:
        proc = subprocess.Popen(
            [str(elephant), "serve", "--auth", "local"], env=env, stdout=log_file, stderr=log_file
        )
    try:
        deadline = time.monotonic() + 120
        body = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                body = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).json()
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        assert body is not None, f"no /health within 120 s:\n{log_path.read_text()[-3000:]}"
        assert body["status"] == "ok"
        assert body["database"]["extensions"]["age"]["installed"] is True
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"no exit 60 s after SIGTERM:\n{log_path.read_text()[-3000:]}")
        assert code in (0, 143)  # exited by itself, not killed
        assert EmbeddedPostgres(tmp_path / "embedded").status() is None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        EmbeddedPostgres(tmp_path / "embedded").stop()
