"""The Litestar application factory."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from litestar import Litestar
from litestar.di import Provide
from litestar.handlers import ASGIRouteHandler
from litestar.openapi import OpenAPIConfig

from app import __version__
from app.api.errors import EXCEPTION_HANDLERS
from app.api.graph import GraphController
from app.api.health import HealthController
from app.api.memory import MemoryController
from app.api.search import SearchController
from app.api.sessions import SessionsController
from app.config import Settings
from app.db import Database
from app.services.runtime import Elephant


def create_app(settings: Settings, elephant: Elephant | None = None) -> Litestar:
    """Build the app. Given an ``elephant`` the caller owns it; otherwise the app opens one
    at start-up (with the in-process worker when worker.enabled) and closes it at shutdown."""
    holder: dict[str, Elephant] = {}
    if elephant is not None:
        holder["elephant"] = elephant

    def startup() -> None:
        if "elephant" not in holder:
            opened = Elephant.open(settings)
            if settings.worker.enabled:
                opened.start_worker()
            holder["elephant"] = opened
            holder["owned"] = opened

    def shutdown() -> None:
        owned = holder.pop("owned", None)
        if owned is not None:
            owned.close()

    def provide_elephant() -> Elephant:
        return holder["elephant"]

    def provide_db() -> Database:
        return holder["elephant"].db

    # MCP (streamable HTTP) at /mcp, served by the same runtime; its session manager
    # runs in the app's lifespan.
    mounts: list[ASGIRouteHandler] = []
    lifespan: list[Callable[[Litestar], AbstractAsyncContextManager[None]]] = []
    if settings.mcp.mount_in_api:
        from app.api.mcp import mcp_mount

        mcp_endpoint, mcp_lifespan = mcp_mount(settings, provide_elephant)
        mounts.append(mcp_endpoint)
        lifespan.append(mcp_lifespan)

    return Litestar(
        route_handlers=[
            HealthController,
            GraphController,
            MemoryController,
            SearchController,
            SessionsController,
            *mounts,
        ],
        dependencies={
            "elephant": Provide(provide_elephant, sync_to_thread=False),
            "db": Provide(provide_db, sync_to_thread=False),
        },
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        on_startup=[startup],
        on_shutdown=[shutdown],
        lifespan=lifespan,
        openapi_config=OpenAPIConfig(title="Elephant", version=__version__, path="/schema"),
        debug=False,
    )
