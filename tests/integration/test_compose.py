"""docker-compose.yml and its images, checked without a container engine.

No Docker engine runs on the project's machines, so nothing here builds or starts a
container. Instead the file is validated against the Compose Specification's JSON schema
where one is at hand (COMPOSE_SPEC_SCHEMA=path: the schema is third-party and not kept in
this repository; docker compose v2.40.3 embeds it), its variables are interpolated as compose does, the API's environment goes through the
app's own settings loader, and the health checks run for real: the Postgres check against
an embedded PostgreSQL listening on the socket only (as the image's first-init phase does)
and then on TCP, the API check against the real app on 127.0.0.1, with the reranker wired
as compose wires it and absent. `docker compose config` runs too where a compose binary
is on PATH.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import yaml

from app.api import create_app
from app.config import Settings, load_settings
from app.db import Database
from app.db.embedded import EmbeddedPostgres, binaries_dir
from app.providers.embedder import Embedder
from app.services.memory.commit import commit_note
from app.services.memory.schemas import NoteIn
from app.services.runtime import Elephant
from tests.conftest import free_port, operator_key, serve_in_thread

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
SCHEMA = os.environ.get("COMPOSE_SPEC_SCHEMA")
API_DOCKERFILE = ROOT / "docker" / "api.Dockerfile"
# What a user sets: the password only; everything else takes the file's defaults.
USER_ENV = {"POSTGRES_PASSWORD": "pw"}


def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict)
    return data


def validator() -> jsonschema.Draft7Validator:
    if not SCHEMA:
        pytest.skip("COMPOSE_SPEC_SCHEMA names no Compose Specification schema file")
    return jsonschema.Draft7Validator(json.loads(Path(SCHEMA).read_text()))


_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}")


def interpolate(value: str, env: Mapping[str, str]) -> str:
    """Compose's ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}, ${VAR?error},
    ${VAR:+alt} and ${VAR+alt} (nothing else appears in the file)."""

    def replace(match: re.Match[str]) -> str:
        name, operator, argument = match.group(1), match.group(2), match.group(3) or ""
        value = env.get(name)
        if operator is None:
            return value or ""
        unset = value is None or (operator.startswith(":") and value == "")
        if operator.endswith("-"):
            return argument if unset or value is None else value
        if operator.endswith("?"):
            if unset or value is None:
                raise ValueError(f"required variable {name}: {argument}")
            return value
        return "" if unset else argument  # "+"

    assert "$$" not in value and re.search(r"\$[A-Za-z_]", value) is None, value
    return _VARIABLE.sub(replace, value)


def dockerfile_env(path: Path) -> dict[str, str]:
    env: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.startswith("ENV "):
            for item in line[4:].split():
                key, _, value = item.partition("=")
                env[key] = value
    return env


def api_environment(user_env: Mapping[str, str] = USER_ENV) -> dict[str, str]:
    """What the API process sees: the image's ENV, then the compose environment."""
    service = compose()["services"]["api"]
    env = dockerfile_env(API_DOCKERFILE)
    env.update(
        {key: interpolate(str(raw), user_env) for key, raw in service["environment"].items()}
    )
    return env


def healthcheck(service: str) -> list[str]:
    test = compose()["services"][service]["healthcheck"]["test"]
    assert isinstance(test, list) and test[0] == "CMD", f"{service}: exec form, no shell"
    return [str(part) for part in test[1:]]


def with_option(command: list[str], option: str, value: str) -> list[str]:
    index = command.index(option)
    return [*command[: index + 1], value, *command[index + 2 :]]


# ------------------------------------------------------------------- the file itself


def test_the_file_follows_the_compose_specification() -> None:
    errors = sorted(validator().iter_errors(compose()), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)
    # the schema does reject a wrong file (a misspelt health-check key)
    broken = compose()
    broken["services"]["api"]["healthcheck"]["intervall"] = "5s"
    assert not validator().is_valid(broken)


def _compose_command() -> list[str] | None:
    for command in (["docker", "compose"], ["docker-compose"]):
        if shutil.which(command[0]) is None:
            continue
        probe = subprocess.run([*command, "version"], capture_output=True, text=True)
        if probe.returncode == 0 and "version v2" in probe.stdout.lower():
            return command
    return None


def test_docker_compose_config_accepts_the_file() -> None:
    command = _compose_command()
    if command is None:
        pytest.skip("no docker compose v2 on PATH")
    base = [*command, "--project-directory", str(ROOT), "-f", str(COMPOSE)]
    env = {**os.environ, **USER_ENV}
    for profile in ([], ["--profile", "reranker"]):
        done = subprocess.run(
            [*base, *profile, "config", "--format", "json"], capture_output=True, text=True, env=env
        )
        assert done.returncode == 0, done.stderr
        services = json.loads(done.stdout)["services"]
        assert ("reranker" in services) == bool(profile)
        api_env = services["api"]["environment"]
        assert api_env["ELEPHANT_RERANKER_URL"] == "http://reranker:7788"
    del env["POSTGRES_PASSWORD"]
    missing = subprocess.run([*base, "config", "--quiet"], capture_output=True, text=True, env=env)
    assert missing.returncode != 0 and "POSTGRES_PASSWORD" in missing.stderr


def test_every_service_restarts_unless_stopped() -> None:
    services = compose()["services"]
    assert {name: spec.get("restart") for name, spec in services.items()} == dict.fromkeys(
        services, "unless-stopped"
    )


def test_postgres_password_is_required() -> None:
    with pytest.raises(ValueError, match="POSTGRES_PASSWORD"):
        api_environment({})


def test_the_api_waits_for_a_healthy_postgres_and_has_a_health_check() -> None:
    api = compose()["services"]["api"]
    assert api["depends_on"]["postgres"]["condition"] == "service_healthy"
    command = healthcheck("api")
    assert command[:2] == ["python", "-c"]
    assert "http://127.0.0.1:7777/health" in command[2]
    assert api["ports"] == ["127.0.0.1:7777:7777"]
    # the check's Host (127.0.0.1) must stay allowed, or the check gets 400
    settings = load_settings(api_environment())
    assert "127.0.0.1" in settings.server.allowed_hosts
    assert settings.server.port == 7777 and settings.server.host == "0.0.0.0"


def test_the_api_environment_is_valid_and_wires_the_reranker() -> None:
    """load_settings rejects unknown ELEPHANT_* names, so a typo fails here."""
    settings = load_settings(api_environment())
    assert settings.database.url == "postgresql://elephant:pw@postgres:5432/elephant"
    assert settings.reranker.enabled is True
    assert settings.reranker.url == "http://reranker:7788"
    reranker = compose()["services"]["reranker"]
    assert reranker["profiles"] == ["reranker"]
    assert reranker["ports"] == ["127.0.0.1:7788:7788"]
    # switched off by one variable, for hosts without the GPU profile
    off = load_settings(api_environment({**USER_ENV, "ELEPHANT_RERANKER_ENABLED": "false"}))
    assert off.reranker.enabled is False


# ------------------------------------------------------------------- the checks, run


@pytest.mark.slow
def test_postgres_health_check_fails_while_only_the_socket_listens(tmp_path: Path) -> None:
    """The postgres image's first init runs on a temporary server with listen_addresses=''
    (socket only), then restarts it: the check must not pass in that phase. The embedded
    server with tcp=false is exactly that; with tcp=true it is the real server."""
    command = healthcheck("postgres")
    assert command[0] == "pg_isready" and command[command.index("-h") + 1] == "127.0.0.1"
    port = free_port()
    command = with_option(command, "-p", str(port))
    command[0] = str(binaries_dir() / "pg_isready")
    root = tmp_path / "embedded"

    socket_only = EmbeddedPostgres(root, port=port, tcp=False)
    socket_only.start()
    try:
        over_socket = with_option(command, "-h", str(socket_only.socket_dir))
        assert subprocess.run(over_socket, capture_output=True).returncode == 0
        init_phase = subprocess.run(command, capture_output=True, text=True)
        assert init_phase.returncode != 0, init_phase.stdout
    finally:
        socket_only.stop()

    serving = EmbeddedPostgres(root, port=port, tcp=True)
    serving.start()
    try:
        ready = subprocess.run(command, capture_output=True, text=True)
        assert ready.returncode == 0, ready.stdout + ready.stderr
    finally:
        serving.stop()


@contextmanager
def served(settings: Settings, runtime: Elephant) -> Iterator[int]:
    """The real API served by uvicorn in a thread on a free loopback port."""
    with serve_in_thread(create_app(settings, runtime)) as url:
        yield int(url.rsplit(":", 1)[1])


def run_api_check(port: int) -> subprocess.CompletedProcess[str]:
    command = healthcheck("api")
    script = command[2].replace("127.0.0.1:7777", f"127.0.0.1:{port}")
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)


def test_api_health_check_and_search_without_the_reranker_profile(
    settings: Settings, db: Database, embedder: Embedder
) -> None:
    """The API as compose configures it (reranker on, at http://reranker:7788) with no
    reranker running: healthy, and search answers in the fused order, saying why."""
    wired = settings.model_copy(update={"reranker": load_settings(api_environment()).reranker})
    runtime = Elephant(settings=wired, db=db, embedder=embedder, llm=None)
    commit_note(runtime, "compose", NoteIn(text="Ola keeps bees on a roof in Oslo", source="n"))
    headers = {"Authorization": f"Bearer {operator_key(db)}", "X-Elephant-Tenant": "compose"}
    try:
        with served(wired, runtime) as port:
            check = run_api_check(port)
            assert check.returncode == 0, check.stderr
            reasons = []
            for _ in range(4):
                response = httpx.post(
                    f"http://127.0.0.1:{port}/search",
                    json={"query": "Ola bees", "explain": True},
                    headers=headers,
                    timeout=30,
                )
                assert response.status_code == 200, response.text
                report = response.json()["explain"]["reranker"]
                assert report["used"] is False and report["fallback"] == "fused order"
                reasons.append(report["reason"])
            assert "reranker:7788" in reasons[0]
            assert "circuit open" in reasons[-1]  # no more waiting on an absent service
        stopped = run_api_check(port)
        assert stopped.returncode != 0
    finally:
        runtime.close_providers()
