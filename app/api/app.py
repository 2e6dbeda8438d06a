"""The Litestar application factory."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from litestar import Litestar
from litestar.config.cors import CORSConfig
from litestar.datastructures import State
from litestar.di import Provide
from litestar.handlers import ASGIRouteHandler
from litestar.openapi import OpenAPIConfig
from litestar.routes import HTTPRoute
from litestar.types import BeforeMessageSendHookHandler, ControllerRouterHandler

from app import __version__
from app.api.analysts import AnalystsController
from app.api.conversations import ConversationsController
from app.api.deps import REQUEST_DEPENDENCIES
from app.api.error_shape import ErrorShape
from app.api.errors import EXCEPTION_HANDLERS
from app.api.graph import GraphController
from app.api.health import HealthController
from app.api.keys import KeysController
from app.api.memory import MemoryController
from app.api.metrics import RequestTiming, metrics_route, observe_response
from app.api.params import check_url_text
from app.api.records import RecordsController
from app.api.request_id import RequestLogContext, add_request_id
from app.api.requests import ElephantRequest, RequestModels
from app.api.search import SearchController
from app.api.sessions import SessionsController
from app.api.store import StoreController
from app.api.tenant import TenantController
from app.api.usage import UsageController
from app.config import Settings
from app.db import Database
from app.protocol import TENANT_HEADER
from app.services.jobs.worker import start_worker
from app.services.runtime import Elephant
from app.web.access import AccessMiddleware
from app.web.access_log import access_hook
from app.web.failed_auth import FailedAuthGuard
from app.web.proxies import behind_proxies
from app.web.route_access import PUBLIC, check_route_access, route_access

OPENAPI_PATH = "/schema"


def create_app(
    settings: Settings,
    elephant: Elephant | None = None,
    *,
    bind: str | None = None,
    link_token: str | None = None,
) -> Litestar:
    """Build the app. Given an ``elephant`` the caller owns it; otherwise the app opens one
    at start-up (with the in-process worker when worker.enabled) and closes it at shutdown.
    ``bind`` (the address served on) joins the default allowed hosts; ``link_token`` is
    the local CLI's credential (app/services/ops/server_link.py)."""
    holder: dict[str, Elephant] = {}
    if elephant is not None:
        holder["elephant"] = elephant

    def startup() -> None:
        if "elephant" not in holder:
            opened = Elephant.open(settings)
            if settings.worker.enabled:
                start_worker(opened)
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

    # Failed key checks from one address and key prefix: one budget for REST and MCP.
    failed_auth = FailedAuthGuard(settings.auth)
    # MCP (streamable HTTP) at /mcp, served by the same runtime; built at its first
    # request (app/api/mcp.py), its session manager then runs in the app's lifespan.
    mounts: list[ASGIRouteHandler] = []
    lifespan: list[Callable[[Litestar], AbstractAsyncContextManager[None]]] = []
    # The request id first: the access line (by route template, app/web/access_log.py)
    # carries it.
    before_send: list[BeforeMessageSendHookHandler] = [
        add_request_id,
        access_hook(detail=settings.log.access_detail),
        observe_response,
    ]
    if settings.mcp.mount_in_api:
        from app.api.mcp import mcp_mount

        mcp_endpoint, mcp_lifespan = mcp_mount(settings, provide_elephant, failed_auth)
        mounts.append(mcp_endpoint)
        lifespan.append(mcp_lifespan)

    scrape = (
        [metrics_route(settings, lambda: holder.get("elephant"))]
        if settings.metrics.enabled
        else []
    )

    # The web console at /ui (app/console), imported only when served.
    console: list[ControllerRouterHandler] = []
    template_config = None
    if settings.console.enabled:
        from app.console import console_router
        from app.console import template_config as console_templates

        console.append(console_router())
        template_config = console_templates()

    cors = None
    if settings.server.cors_origins:
        cors = CORSConfig(
            allow_origins=list(settings.server.cors_origins),
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
            allow_headers=["Authorization", "Content-Type", TENANT_HEADER],
        )
    app = Litestar(
        route_handlers=[
            HealthController,
            AnalystsController,
            ConversationsController,
            GraphController,
            KeysController,
            MemoryController,
            RecordsController,
            SearchController,
            SessionsController,
            StoreController,
            TenantController,
            UsageController,
            *mounts,
            *scrape,
            *console,
        ],
        template_config=template_config,
        # failed_auth: the console's sign-in spends the budget REST and MCP spend.
        state=State({"settings": settings, "failed_auth": failed_auth}),
        middleware=[
            # outermost: the client's address from trusted proxies only (app/web/proxies.py)
            behind_proxies(settings.auth),
            ErrorShape(),  # reshapes errors written outside the exception handlers
            RequestLogContext(),
            RequestTiming(),
            AccessMiddleware(settings, provide_elephant, bind, link_token, failed_auth),
        ],
        before_send=before_send,
        cors_config=cors,
        request_max_body_size=settings.server.max_body_bytes,
        dependencies={
            "elephant": Provide(provide_elephant, sync_to_thread=False),
            "db": Provide(provide_db, sync_to_thread=False),
            **REQUEST_DEPENDENCIES,
        },
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        before_request=check_url_text,
        request_class=ElephantRequest,
        plugins=[RequestModels()],  # request models refused as the caller's 422 naming each field
        on_startup=[startup],
        on_shutdown=[shutdown],
        lifespan=lifespan,
        openapi_config=OpenAPIConfig(title="Elephant", version=__version__, path=OPENAPI_PATH),
        logging_config=None,  # app.logs sets up logging (Litestar's default would redo the root's)
        debug=False,
    )
    handlers = []
    for route in app.routes:
        for handler in (
            route.route_handlers if isinstance(route, HTTPRoute) else [route.route_handler]
        ):
            implicit_options = set(getattr(handler, "http_methods", ())) == {"OPTIONS"}
            if route_access(handler) is None and (
                implicit_options or route.path.startswith(OPENAPI_PATH)
            ):
                handler.opt.update(PUBLIC.opt)  # the API description, or which methods a path has
            handlers.append((route.path, handler.opt))
    check_route_access(handlers)
    return app
