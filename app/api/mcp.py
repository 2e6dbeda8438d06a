"""The MCP server mounted in the API at /mcp (streamable HTTP), with its lifespan.

The server is built at the first request to /mcp, not when the app is: fastmcp, the
MCP SDK and the tools' models take about 2 s to import and register, which a server
answering only REST (and its first search) need not wait for. The app's lifespan runs a
task that waits for that first request, builds the server in a worker thread (the event
loop keeps serving meanwhile), then runs fastmcp's session manager until shutdown. A
build that fails is logged and refuses each MCP request (500); REST is unaffected.

Each POST's JSON-RPC method (and tool name, for tools/call) is bound to the request's
log lines, the access line included (``POST /mcp 200 ... [rpc=tools/call tool=search]``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from litestar import Litestar, asgi
from litestar.handlers import ASGIRouteHandler
from litestar.types import ASGIApp, Receive, ReceiveMessage, Scope, Send

from app import logs
from app.config import Settings
from app.services.runtime import Elephant
from app.web.failed_auth import FailedAuthGuard
from app.web.route_access import MCP

if TYPE_CHECKING:
    from fastmcp.server.http import StarletteWithLifespan

MOUNT_PATH = "/mcp"
# Bodies past this size are not parsed for their method (the tool still runs).
SNIFF_BYTES = 65536

log = logging.getLogger(__name__)


class LazyMCP:
    """The MCP app, built once when first asked for, its session manager run by
    :meth:`running` (the app's lifespan) from then until shutdown."""

    def __init__(self, build: Callable[[], tuple[StarletteWithLifespan, ASGIApp]]) -> None:
        self._build = build
        self._wanted: anyio.Event | None = None
        self._ready: anyio.Event | None = None
        self._app: ASGIApp | None = None
        self._error: BaseException | None = None

    async def app(self) -> ASGIApp:
        """The gated MCP app; the first caller starts the build, every caller waits for it."""
        if self._wanted is None or self._ready is None:
            raise RuntimeError("the MCP mount is served only while the app's lifespan runs")
        self._wanted.set()
        await self._ready.wait()
        if self._app is None:
            raise RuntimeError("the MCP server could not be built (see the log)") from self._error
        return self._app

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        self._wanted, self._ready = anyio.Event(), anyio.Event()
        self._app = self._error = None  # a second lifespan of the app builds afresh
        stop = anyio.Event()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._serve, stop)
            try:
                yield
            finally:
                if not self._ready.is_set():  # never asked for, or still building
                    tasks.cancel_scope.cancel()
                stop.set()

    async def _serve(self, stop: anyio.Event) -> None:
        assert self._wanted is not None and self._ready is not None
        await self._wanted.wait()
        started = time.perf_counter()
        try:
            mcp, app = await anyio.to_thread.run_sync(self._build)
            async with mcp.lifespan(mcp):
                self._app = app
                took = time.perf_counter() - started
                log.info("MCP server built at its first request in %.2fs", took)
                self._ready.set()
                await stop.wait()
        except Exception as exc:
            log.exception("the MCP server failed (building it, or its session manager)")
            self._error, self._app = exc, None
        finally:
            self._ready.set()  # whoever still waits is told there is no MCP server


def mcp_mount(
    settings: Settings, get_elephant: Callable[[], Elephant], failed_auth: FailedAuthGuard
) -> tuple[ASGIRouteHandler, Callable[[Litestar], AbstractAsyncContextManager[None]]]:
    """(the /mcp route handler, the lifespan that runs fastmcp's session manager). Keys
    are checked by the MCP gate against ``failed_auth``, the budget REST spends too."""

    def build() -> tuple[StarletteWithLifespan, ASGIApp]:
        from app.mcp.http import build_http_server, gated, http_app

        mcp = http_app(build_http_server(settings, get_elephant), path="/")
        return mcp, gated(mcp, settings, get_elephant, failed_auth)  # type: ignore[return-value]

    lazy = LazyMCP(build)

    @asgi(MOUNT_PATH, is_mount=True, copy_scope=True, opt=MCP.opt)
    async def mcp_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        app = await lazy.app()
        if scope.get("method") != "POST":
            await app(scope, receive, send)
            return
        first = await receive()
        pending = [first]

        async def replay() -> ReceiveMessage:
            return pending.pop() if pending else await receive()

        with logs.bound(**rpc_fields(first)):
            await app(scope, replay, send)

    def lifespan(_: Litestar) -> AbstractAsyncContextManager[None]:
        return lazy.running()

    return mcp_endpoint, lifespan


def rpc_fields(message: ReceiveMessage) -> dict[str, str | None]:
    """The JSON-RPC method of a one-chunk body, and the tool a tools/call names."""
    body = message.get("body", b"") if message["type"] == "http.request" else b""
    if message.get("more_body") or not body or len(body) > SNIFF_BYTES:
        return {}
    try:
        call: Any = json.loads(body)
    except ValueError:
        return {}
    if not isinstance(call, dict) or not isinstance(call.get("method"), str):
        return {}
    params = call.get("params")
    tool = params.get("name") if isinstance(params, dict) else None
    method = str(call["method"])[:64]
    return {
        "rpc": method,
        "tool": str(tool)[:64] if method == "tools/call" and isinstance(tool, str) else None,
    }
