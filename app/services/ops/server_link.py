"""The CLI's way to a running ``elephant serve``: commands that embed borrow its model.

Loading the embedding model costs a CLI process seconds of CPU (torch, the weights)
for one query; a running server already holds it. So ``elephant serve`` publishes
``<data_dir>/server.json`` while it runs (mode 0600, written atomically, removed at
shutdown): its loopback URL, its pid and process start time, a fingerprint of the
database and model it serves, and a random token made for this run. A CLI command
that embeds (``elephant search``, ``elephant graph search``) reads the file and, when
that process is alive, serves the same database and model, and accepts a connection
within ``CONNECT_TIMEOUT_S``, sends its request there; otherwise (no file, a stale one,
another database, connection refused) it works in-process and loads the model itself.

One server per data dir: ``claim`` takes ``<data_dir>/serve.lock`` (an advisory file
lock the kernel drops when the process dies, however it dies) and checks the port before
``elephant serve`` loads a model or opens the database. A second server stops at once
with a message naming the first (pid, URL) and ``--port``, and touches none of the first
one's files (server.json, the embedded server's holders).

The token grants nothing new: whoever can read data_dir can read the database files
and reach the embedded server's socket anyway. The server accepts it only from a
loopback peer, compared in constant time, as a principal with the read and write
scopes for the tenant the request names (never admin): the CLI's own reach.

Light on purpose: the CLI imports this before anything heavy.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import hmac
import http.client
import json
import logging
import os
import secrets
import socket
import urllib.parse
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeAlias

from app.errors import Conflict, ElephantError
from app.protocol import TENANT_HEADER

if TYPE_CHECKING:
    from app.config import Settings
    from app.services.access.auth import Principal

log = logging.getLogger(__name__)

LINK_FILE = "server.json"
LOCK_FILE = "serve.lock"  # held by the one elephant serve of a data dir while it runs
TOKEN_PREFIX = "elephant-link-"  # noqa: S105 - a prefix, not a secret
# A live server on loopback accepts at once; past this the CLI stops waiting and works
# in-process. Answering may take longer (the server's first query waits for its model).
CONNECT_TIMEOUT_S = 0.5
ANSWER_TIMEOUT_S = 300.0
# A request's query string, by name; a None value is left out.
QueryParams: TypeAlias = Mapping[str, str | int | float | None]


@dataclass(frozen=True)
class Link:
    """What ``elephant serve`` publishes about itself."""

    url: str
    pid: int
    created: float  # the process's start time: a recycled pid is not the server
    database: str  # fingerprint(settings) of the server
    token: str


class LinkUnavailable(Exception):
    """The server cannot take the request (gone, refusing, not ours): work in-process."""


def fingerprint(settings: Settings) -> str:
    """Which database and model a process uses: the CLI borrows only a server whose
    fingerprint is its own (another database or model would answer another question)."""
    if settings.database.url is not None:
        where = f"url:{settings.database.url}"
    else:
        where = f"embedded:{settings.data_dir.expanduser().resolve()}:{settings.embedded.database}"
    what = (
        f"{where}|{settings.embedding.provider}:{settings.embedding.model}:{settings.embedding.dim}"
    )
    return hashlib.sha256(what.encode()).hexdigest()


def loopback_url(bind: str, port: int) -> str | None:
    """Where a local client reaches a server bound to ``bind``; None when the server is
    not on a loopback or wildcard address (a CLI there would not be a loopback peer)."""
    host = bind.strip("[]").lower()
    if host in ("0.0.0.0", "", "localhost") or host.startswith("127."):  # noqa: S104
        return f"http://127.0.0.1:{port}"
    if host in ("::", "::1"):
        return f"http://[::1]:{port}"
    return None


def _path(settings: Settings) -> Path:
    return settings.data_dir.expanduser() / LINK_FILE


def publish(settings: Settings, bind: str, port: int) -> Link | None:
    """Write this server's link file (0600, atomically); None when the bind address is not
    reachable over loopback. The caller withdraws it at shutdown."""
    url = loopback_url(bind, port)
    if url is None:
        log.info("not publishing %s: %s is not a loopback or wildcard address", LINK_FILE, bind)
        return None
    import psutil

    link = Link(
        url=url,
        pid=os.getpid(),
        created=psutil.Process().create_time(),
        database=fingerprint(settings),
        token=TOKEN_PREFIX + secrets.token_urlsafe(32),
    )
    target = _path(settings)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{LINK_FILE}.{os.getpid()}")
    temporary.unlink(missing_ok=True)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(asdict(link), handle)
    os.replace(temporary, target)
    return link


def withdraw(settings: Settings, link: Link) -> None:
    """Remove the link file if it is still this server's (another may have replaced it)."""
    current = _read(_path(settings))
    if current is not None and hmac.compare_digest(current.token, link.token):
        _path(settings).unlink(missing_ok=True)


def _read(path: Path) -> Link | None:
    try:
        raw = json.loads(path.read_text())
        return Link(
            url=str(raw["url"]),
            pid=int(raw["pid"]),
            created=float(raw["created"]),
            database=str(raw["database"]),
            token=str(raw["token"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def find(settings: Settings) -> Link | None:
    """The published server for this database and model, if its process still lives."""
    link = running(settings)
    return link if link is not None and link.database == fingerprint(settings) else None


def running(settings: Settings) -> Link | None:
    """The server that published this data dir's link file if its process lives, whatever
    database or model it serves (one server per data dir)."""
    link = _read(_path(settings))
    if link is None:
        return None
    import psutil

    try:
        created = psutil.Process(link.pid).create_time()
    except psutil.Error:
        return None  # stale: the server died without removing its file
    return link if abs(created - link.created) < 1.0 else None


@dataclass
class Claim:
    """This process's hold on its data dir as its one server: the open, locked file."""

    handle: IO[str]

    def release(self) -> None:
        self.handle.close()  # closing drops the lock (so does the process's death)


def claim(settings: Settings, bind: str, port: int) -> Claim:
    """Hold ``<data_dir>/serve.lock`` and check that ``bind:port`` is free, or raise
    Conflict naming who has them. Cheap on purpose: ``elephant serve`` calls it first."""
    root = settings.data_dir.expanduser()
    root.mkdir(parents=True, exist_ok=True)
    handle = (root / LOCK_FILE).open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        holder = handle.read().strip() or "?"
        handle.close()
        raise Conflict(_data_dir_taken(settings, holder)) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    taken = _port_taken(bind, port)
    if taken is not None:
        handle.close()
        raise Conflict(f"port {port} on {bind} is in use ({taken}): elephant serve stops here. "
                       "Choose a free port with --port (or server.port)")  # fmt: skip
    return Claim(handle)


def _data_dir_taken(settings: Settings, holder: str) -> str:
    link = running(settings)
    where = f"pid {link.pid}, {link.url}" if link else f"pid {holder}, still starting"
    return (
        f"another elephant serve runs on the data dir {settings.data_dir} ({where}): one "
        "server per data dir, so this one stops here. Use that server, stop it first, or "
        "serve another data dir (ELEPHANT_DATA_DIR) on another port (--port)"
    )


def _port_taken(bind: str, port: int) -> str | None:
    """Why ``bind:port`` cannot be listened on (who holds it, when known), or None."""
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((bind.strip("[]"), port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                return None  # uvicorn reports other bind errors itself
        else:
            return None
    return _listener(port) or "by another program"


def _listener(port: int) -> str | None:
    """The process listening on ``port``, when this user may see it."""
    import psutil

    try:
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
                if conn.pid is None:
                    return None
                name = " ".join(psutil.Process(conn.pid).cmdline()[:3])
                return f"by pid {conn.pid}: {name}"
    except psutil.Error:
        return None
    return None


def health(link: Link, timeout_s: float = 5.0) -> tuple[int, Any]:
    """GET /health of a running server: its status code and JSON answer. OSError when it
    does not answer (refused, timed out)."""
    parts = urllib.parse.urlsplit(link.url)
    assert parts.hostname is not None and parts.port is not None
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout_s)
    try:
        connection.request("GET", "/health", headers={"Accept": "application/json"})
        response = connection.getresponse()
        status, text = response.status, response.read()
    except http.client.HTTPException as exc:
        raise OSError(str(exc)) from None
    finally:
        connection.close()
    try:
        return status, json.loads(text) if text else None
    except ValueError:
        return status, None


def call(
    link: Link,
    method: str,
    path: str,
    *,
    tenant: str,
    body: Any = None,
    query: QueryParams | None = None,
) -> Any:
    """Send one request to the server; its JSON answer. LinkUnavailable when the server
    is not there to take it (the caller works in-process); ElephantError with the server's
    message when it refuses the request itself (bad input, database down)."""
    parts = urllib.parse.urlsplit(link.url)
    assert parts.hostname is not None and parts.port is not None
    if query:
        present = {key: value for key, value in query.items() if value is not None}
        path = f"{path}?{urllib.parse.urlencode(present)}"
    headers = {
        "Authorization": f"Bearer {link.token}",
        TENANT_HEADER: tenant,
        "Accept": "application/json",
    }
    payload = None
    if body is not None:
        payload = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=CONNECT_TIMEOUT_S)
    try:
        try:
            connection.connect()
        except OSError as exc:
            raise LinkUnavailable(f"{link.url} does not accept connections: {exc}") from None
        assert connection.sock is not None
        connection.sock.settimeout(ANSWER_TIMEOUT_S)
        try:
            connection.request(method, path, body=payload, headers=headers)
            response = connection.getresponse()
            status, text = response.status, response.read()
        except (OSError, http.client.HTTPException) as exc:
            if isinstance(exc, socket.timeout):
                raise ElephantError(
                    f"the server at {link.url} did not answer within {ANSWER_TIMEOUT_S:.0f} s"
                ) from None
            raise LinkUnavailable(f"{link.url} dropped the request: {exc}") from None
    finally:
        connection.close()
    try:
        answer = json.loads(text) if text else None
    except ValueError:
        answer = None
    if status in (401, 421):  # not the server that published this token, or not for us
        raise LinkUnavailable(f"{link.url} refused the link token ({status})")
    if status >= 400:
        message = answer.get("message") if isinstance(answer, dict) else None
        error = ElephantError(str(message or f"the server at {link.url} answered {status}"))
        error.status_code = status
        raise error
    return answer


def delegate(
    settings: Settings,
    method: str,
    path: str,
    *,
    tenant: str,
    body: Any = None,
    query: QueryParams | None = None,
) -> tuple[Any] | None:
    """The running server's answer as a 1-tuple, or None when there is no server to ask
    (the caller then works in-process)."""
    link = find(settings)
    if link is None:
        log.info("no running server for this database: working in-process")
        return None
    try:
        answer = call(link, method, path, tenant=tenant, body=body, query=query)
    except LinkUnavailable as exc:
        log.info("%s: working in-process", exc)
        return None
    log.info("answered by the server at %s (pid %s)", link.url, link.pid)
    return (answer,)


# ------------------------------------------------------------------ server side


def accepts(presented: str | None, client: str | None, token: str | None) -> bool:
    """Whether a request's bearer token (``presented``) is this server's link token and
    the request comes from loopback."""
    from app.services.access.auth import is_loopback

    if token is None or presented is None or client is None or not is_loopback(client):
        return False
    return hmac.compare_digest(presented.encode(), token.encode())


def principal() -> Principal:
    """Who a link-token request is: read and write for the tenant it names."""
    from app.services.access.auth import Principal

    return Principal(name="cli (server link)", scopes=frozenset({"read", "write"}), tenant=None)
