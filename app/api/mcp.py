"""The MCP server mounted in the API at /mcp (streamable HTTP), with its lifespan.

Each POST's JSON-RPC method (and tool name, for tools/call) is bound to the request's
log lines, the access line included (``POST /mcp 200 ... [rpc=tools/call tool=search]``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from litestar import Litestar, asgi
from litestar.handlers import ASGIRouteHandler
from litestar.types import Receive, ReceiveMessage, Scope, Send

from app import logs
from app.config import Settings
from app.mcp.http import build_http_server, gated, http_app
from app.services.runtime import Elephant
from app.web.failed_auth import FailedAuthGuard
from app.web.route_access import MCP

MOUNT_PATH = "/mcp"
# Bodies past this size are not parsed for their method (the tool still runs).
SNIFF_BYTES = 65536


def mcp_mount(
    settings: Settings, get_elephant: Callable[[], Elephant], failed_auth: FailedAuthGuard
) -> tuple[ASGIRouteHandler, Callable[[Litestar], AbstractAsyncContextManager[None]]]:
    """(the /mcp route handler, the lifespan that runs fastmcp's session manager). Keys
    are checked by the MCP gate against ``failed_auth``, the budget REST spends too."""
    mcp = http_app(build_http_server(settings, get_elephant), path="/")
    app = gated(mcp, settings, get_elephant, failed_auth)

    @asgi(MOUNT_PATH, is_mount=True, copy_scope=True, opt=MCP.opt)
    async def mcp_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") != "POST":
            await app(scope, receive, send)  # type: ignore[arg-type]
            return
        first = await receive()
        pending = [first]

        async def replay() -> ReceiveMessage:
            return pending.pop() if pending else await receive()

        with logs.bound(**rpc_fields(first)):
            await app(scope, replay, send)  # type: ignore[arg-type]

    @asynccontextmanager
    async def lifespan(_: Litestar) -> AsyncIterator[None]:
        async with mcp.lifespan(mcp):
            yield

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
