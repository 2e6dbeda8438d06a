"""The Elephant MCP server: the tool sets of the active profile, over the service layer.

One builder for every transport (stdio, standalone streamable HTTP, mounted in
the API at /mcp); the tools call app.services in-process.

Over stdio (``elephant mcp``) a client waits for ``initialize`` at start-up (Codex gives
up after 10 s by default), so :func:`stdio_server` answers it before anything heavy is
loaded: the server starts with no tools, and once the client says it is initialized
(or sends anything else) a background thread imports the tool sets, registers the
profile's tools, opens the database (migrating it if configured) and starts the
worker. Listing tools, resources and prompts waits for the first step, every other
request but ``initialize`` and ``ping`` for all of them (:class:`AwaitStartup`); then
the embedding model loads, and the first embedding waits for it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from fastmcp.exceptions import ResourceError, ToolError
from fastmcp.server.auth import AuthProvider, require_scopes
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR

from app import __version__
from app.config import Settings
from app.errors import ElephantError
from app.mcp.context import ElephantMCP, McpRuntime
from app.mcp.errors import ArgumentErrors, translate
from app.mcp.limits import KeyRateLimits
from app.mcp.registry import Kind, Profile, ToolSet, ToolSpec

if TYPE_CHECKING:
    from app.services.access.auth import Scope
    from app.services.runtime import Elephant

log = logging.getLogger(__name__)

# The API key scope each kind of tool needs (the REST endpoints use the same split).
SCOPE_OF_KIND: dict[Kind, Scope] = {"read": "read", "write": "write", "delete": "admin"}

INSTRUCTIONS = """\
Elephant is your long-term memory. At the start of a session call get_handoff for the \
project; search (or reflect) before answering from memory; store durable facts, \
decisions and preferences as self-contained notes; give feedback on results that helped \
or misled; at the end call close_session with the transcript. Keep a knowledge graph of \
entities, decisions and their relations with record / record_decision; correct it with \
revise or invalidate_observations (history is kept)."""


def toolsets() -> tuple[ToolSet, ...]:
    """Every tool set the server knows; a tool set's tools are offered per profile. Imported
    when first asked: the tools pull in the whole service layer."""
    from app.mcp import graph_tools, tools

    return (tools.MEMORY, graph_tools.GRAPH_TOOLS)


def __getattr__(name: str) -> Any:
    if name == "TOOLSETS":  # the constant this used to be
        return toolsets()
    raise AttributeError(name)


def specs(profile: Profile) -> list[ToolSpec]:
    """The tools the profile offers, in declaration order."""
    return [spec for toolset in toolsets() for spec in toolset if spec.offered_in(profile)]


def build_server(
    settings: Settings,
    get_elephant: Callable[[], Elephant],
    *,
    profile: Profile | None = None,
    auth: AuthProvider | None = None,
) -> ElephantMCP:
    """The server for ``profile`` (default mcp.profile); tools outside it are not registered."""
    active = profile or settings.mcp.profile
    middleware: list[Middleware] = [ArgumentErrors()]
    if auth is not None:
        scopes = {spec.name: SCOPE_OF_KIND[spec.kind] for spec in specs(active)}
        middleware.append(KeyRateLimits(settings.auth, dict(scopes)))
    server = _new_server(settings, get_elephant, auth=auth, middleware=middleware)
    register_tools(server, active, keyed=auth is not None)
    return server


def _new_server(
    settings: Settings,
    get_elephant: Callable[[], Elephant],
    *,
    auth: AuthProvider | None,
    middleware: list[Middleware],
) -> ElephantMCP:
    return ElephantMCP(
        McpRuntime(settings, get_elephant),
        name="elephant",
        version=__version__,
        instructions=INSTRUCTIONS,
        auth=auth,
        mask_error_details=True,
        middleware=middleware,
    )


def register_tools(server: ElephantMCP, profile: Profile, *, keyed: bool) -> None:
    """Register the profile's tools and the handoff resource. With API keys each tool
    needs its scope (a key without it neither sees nor calls it)."""
    from app.mcp import tools

    for spec in specs(profile):
        server.tool(
            translate(spec.handler()),
            name=spec.name,
            annotations=spec.annotations(),
            output_schema=None,
            auth=require_scopes(SCOPE_OF_KIND[spec.kind]) if keyed else None,
        )
    server.resource(
        "elephant://handoff/{project}",
        name="handoff",
        description="The latest session handoff of a project (JSON).",
        mime_type="application/json",
        auth=require_scopes("read") if keyed else None,
    )(translate(tools.handoff_resource, ResourceError))


# ------------------------------------------------------------------ stdio

# Answered once the tools are registered, without waiting for the database.
LISTINGS = frozenset({"tools/list", "resources/list", "resources/templates/list", "prompts/list"})


class Startup:
    """What the stdio server loads after it has answered ``initialize``: once, in a
    background thread, started by the first message after it."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.server: ElephantMCP | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._listed = threading.Event()  # the tools are registered
        self._ready = threading.Event()  # ... and the database is open (or failed to)
        self._elephant: Elephant | None = None
        self._error: str | None = None
        self._listing_failed = False

    def begin(self) -> None:
        """Start loading (idempotent)."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="mcp-startup", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        assert self.server is not None
        try:
            register_tools(self.server, self.settings.mcp.profile, keyed=False)
        except Exception as exc:  # noqa: BLE001 - _fail logs it, requests are told
            self._fail(exc, listing=True)
            return
        finally:
            self._listed.set()
        try:
            from app.services.runtime import Elephant

            # A serving process: BM25 repairs in the background, never on the start path.
            elephant = Elephant.open(self.settings, keyword_repairs="background")
            from app.services.ops import reembed

            reembed.follow(elephant)  # the database's model, now and after a re-embed
            if self.settings.worker.enabled:
                from app.services.jobs.worker import start_worker

                start_worker(elephant)
            self._elephant = elephant
        except Exception as exc:  # noqa: BLE001 - _fail logs it, requests are told
            self._fail(exc, listing=False)
            return
        finally:
            self._ready.set()
        warm_up = getattr(elephant.embedder, "warm_up", None)
        if callable(warm_up):
            warm_up()  # in its own thread; the first embedding waits for it

    def _fail(self, exc: Exception, *, listing: bool) -> None:
        """Remember why the start failed: every request that waits for it is told."""
        if isinstance(exc, ElephantError):
            log.error("elephant mcp could not start: %s", exc.message)
            self._error = exc.message
        else:
            log.exception("elephant mcp could not start")
            self._error = f"{type(exc).__name__}: {exc}"
        self._listing_failed = listing
        self._ready.set()

    async def wait(self, method: str | None) -> None:
        """Until the tools are registered (a listing) or the database is open too (anything
        else); the start's failure, if what the request waited for failed."""
        listing = method in LISTINGS
        stage = self._listed if listing else self._ready
        if not stage.is_set():
            await anyio.to_thread.run_sync(stage.wait)
        if self._error is not None and (self._listing_failed or not listing):
            message = f"Elephant could not start: {self._error}"
            if method == "tools/call":
                raise ToolError(message)
            if method == "resources/read":
                raise ResourceError(message)
            raise MCPError(INTERNAL_ERROR, message)

    def elephant(self) -> Elephant:
        """The runtime the tools use (McpRuntime.get_elephant)."""
        self._ready.wait()
        if self._elephant is None:
            raise ElephantError(f"Elephant could not start: {self._error}")
        return self._elephant

    def close(self) -> None:
        """After the transport ended: let a start in progress finish, then close it."""
        if self._thread is not None:
            self._thread.join()
        if self._elephant is not None:
            self._elephant.close()


class AwaitStartup(Middleware):
    """Holds every request but initialize and ping until :class:`Startup` is done; the
    first message after initialize (the client's ``notifications/initialized``) starts it."""

    def __init__(self, startup: Startup) -> None:
        self.startup = startup

    async def on_message(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        if context.method != "initialize":
            self.startup.begin()
            if context.type == "request" and context.method != "ping":
                await self.startup.wait(context.method)
        return await call_next(context)


def stdio_server(settings: Settings) -> tuple[ElephantMCP, Startup]:
    """The stdio server for mcp.profile, able to answer ``initialize`` at once; run it, then
    ``startup.close()``."""
    startup = Startup(settings)
    server = _new_server(
        settings, startup.elephant, auth=None, middleware=[AwaitStartup(startup), ArgumentErrors()]
    )
    startup.server = server
    return server, startup
