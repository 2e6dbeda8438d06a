"""The MCP server mounted in the API at /mcp (streamable HTTP), with its lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from litestar import Litestar, asgi
from litestar.handlers import ASGIRouteHandler
from litestar.types import Receive, Scope, Send

from app.api.access import MCP
from app.config import Settings
from app.mcp.http import build_http_server, http_app
from app.services.runtime import Elephant

MOUNT_PATH = "/mcp"


def mcp_mount(
    settings: Settings, get_elephant: Callable[[], Elephant]
) -> tuple[ASGIRouteHandler, Callable[[Litestar], AbstractAsyncContextManager[None]]]:
    """(the /mcp route handler, the lifespan that runs fastmcp's session manager)."""
    app = http_app(build_http_server(settings, get_elephant), path="/")

    @asgi(MOUNT_PATH, is_mount=True, copy_scope=True, opt=MCP)
    async def mcp_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        await app(scope, receive, send)  # type: ignore[arg-type]

    @asynccontextmanager
    async def lifespan(_: Litestar) -> AsyncIterator[None]:
        async with app.lifespan(app):
            yield

    return mcp_endpoint, lifespan
