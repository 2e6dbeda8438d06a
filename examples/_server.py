"""How an example reaches an Elephant server (shared by every script in examples/).

``elephant_server()`` is a context manager yielding a :class:`Server` (its URL and API key):

- **ELEPHANT_URL set**: that server, with ELEPHANT_API_KEY (if set) as its key. Nothing is
  started or stopped; the example writes into the key's tenant.
- **otherwise**: a throwaway server. ``elephant serve --auth local`` (the ``elephant``
  beside this Python, else the one on PATH) on a free loopback port, on an embedded
  Postgres in a temporary data dir; it waits for ``/health``, and at the end stops the
  server (which stops its Postgres) and removes the directory. Keyless: local auth is
  loopback only. The server inherits your environment (``ELEPHANT_EMBEDDING_*``,
  ``ELEPHANT_LLM_*``, ...) except whatever would point it at another database, data dir,
  port or config file. Its log goes to ``server.log`` in the data dir, and is printed
  if it does not come up.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

START_TIMEOUT_S = 180.0  # first start: initdb, migrations, loading the embedding model
STOP_TIMEOUT_S = 30.0

# Settings the throwaway server must not take from the caller's environment.
_NOT_INHERITED = ("ELEPHANT_URL", "ELEPHANT_API_KEY", "ELEPHANT_CONFIG", "DATABASE_URL")
_NOT_INHERITED_PREFIXES = (
    "ELEPHANT_DATABASE_",
    "ELEPHANT_DATA_DIR",
    "ELEPHANT_EMBEDDED_",
    "ELEPHANT_SERVER_",
    "ELEPHANT_AUTH_",
)


@dataclass(frozen=True)
class Server:
    url: str
    api_key: str | None  # None: a keyless (local auth) server
    started: bool  # True: this process started it (and stops it)


@contextlib.contextmanager
def elephant_server() -> Iterator[Server]:
    """The server named by ELEPHANT_URL, else a throwaway one for the example's run."""
    url = os.environ.get("ELEPHANT_URL")
    if url:
        print(f"[server] using ELEPHANT_URL={url}")
        yield Server(url=url.rstrip("/"), api_key=os.environ.get("ELEPHANT_API_KEY"), started=False)
        return
    with _throwaway_server() as started:
        yield started


def _elephant_command() -> str:
    beside = Path(sys.executable).parent / "elephant"  # the venv's bin, not resolved
    if beside.exists():
        return str(beside)
    found = shutil.which("elephant")
    if found is None:
        sys.exit(
            "no `elephant` command beside this Python nor on PATH: install the server "
            "(make install, or pip install 'elephant-memory[embedded]') or set ELEPHANT_URL"
        )
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _throwaway_server() -> Iterator[Server]:
    data_dir = Path(tempfile.mkdtemp(prefix="elephant-example-"))
    port = _free_port()
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in _NOT_INHERITED and not name.startswith(_NOT_INHERITED_PREFIXES)
    }
    env["ELEPHANT_DATA_DIR"] = str(data_dir)
    env["ELEPHANT_EMBEDDED_PORT"] = str(_free_port())  # names its socket; no TCP listener
    command = [_elephant_command(), "serve", "--auth", "local"]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    url = f"http://127.0.0.1:{port}"
    print(f"[server] starting a throwaway Elephant at {url} (data in {data_dir}) ...")
    began = time.monotonic()
    log_path = data_dir / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_healthy(url, process, log_path)
        print(f"[server] ready in {time.monotonic() - began:.1f} s")
        yield Server(url=url, api_key=None, started=True)
    finally:
        if not _stop(process):  # killed: its embedded Postgres may still run
            subprocess.run([command[0], "embedded", "stop"], env=env, capture_output=True)
        shutil.rmtree(data_dir, ignore_errors=True)


def _wait_healthy(url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"elephant serve exited with {process.returncode}:\n{_tail(log_path)}"
            )
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/health", timeout=2.0).status_code == 200:
                return
        time.sleep(0.3)
    raise RuntimeError(
        f"elephant serve not healthy after {START_TIMEOUT_S:.0f} s:\n{_tail(log_path)}"
    )


def _stop(process: subprocess.Popen[bytes]) -> bool:
    """SIGTERM: the server shuts down gracefully and stops its embedded Postgres. False
    when it had to be killed."""
    graceful = True
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            graceful = False
    print("[server] stopped")
    return graceful


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
