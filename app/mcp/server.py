"""The Elephant MCP server: the tool sets of the active profile, over the service layer.

One builder for every transport (stdio, standalone streamable HTTP, mounted in
the API at /mcp); the tools call app.services in-process.
"""

from __future__ import annotations

from collections.abc import Callable

from fastmcp.exceptions import ResourceError
from fastmcp.server.auth import AuthProvider, require_scopes
from fastmcp.server.middleware import Middleware

from app import __version__
from app.config import Settings
from app.mcp import graph_tools, tools
from app.mcp.context import ElephantMCP, McpRuntime
from app.mcp.errors import ArgumentErrors, translate
from app.mcp.limits import KeyRateLimits
from app.mcp.registry import Kind, Profile, ToolSet, ToolSpec
from app.services.auth import Scope
from app.services.runtime import Elephant

# Every tool set the server knows; a tool set's tools are offered per profile.
TOOLSETS: tuple[ToolSet, ...] = (tools.MEMORY, graph_tools.GRAPH_TOOLS)
# The API key scope each kind of tool needs (the REST endpoints use the same split).
SCOPE_OF_KIND: dict[Kind, Scope] = {"read": "read", "write": "write", "delete": "admin"}

INSTRUCTIONS = """\
Elephant is your long-term memory. At the start of a session call get_handoff for the \
project; search (or reflect) before answering from memory; store durable facts, \
decisions and preferences as self-contained notes; give feedback on results that helped \
or misled; at the end call close_session with the transcript. Keep a knowledge graph of \
entities, decisions and their relations with record / record_decision; correct it with \
revise or invalidate_observations (history is kept)."""


def specs(profile: Profile) -> list[ToolSpec]:
    """The tools the profile offers, in declaration order."""
    return [spec for toolset in TOOLSETS for spec in toolset if spec.offered_in(profile)]


def build_server(
    settings: Settings,
    get_elephant: Callable[[], Elephant],
    *,
    profile: Profile | None = None,
    auth: AuthProvider | None = None,
) -> ElephantMCP:
    """The server for ``profile`` (default mcp.profile); tools outside it are not registered."""
    active = profile or settings.mcp.profile
    keyed = auth is not None
    offered = specs(active)
    middleware: list[Middleware] = [ArgumentErrors()]
    if keyed:
        scopes = {spec.name: SCOPE_OF_KIND[spec.kind] for spec in offered}
        middleware.append(KeyRateLimits(settings.auth, dict(scopes)))
    server = ElephantMCP(
        McpRuntime(settings, get_elephant),
        name="elephant",
        version=__version__,
        instructions=INSTRUCTIONS,
        auth=auth,
        mask_error_details=True,
        middleware=middleware,
    )
    # With API keys each tool needs its scope (a key without it neither sees nor calls it).
    for spec in offered:
        server.tool(
            translate(spec.fn),
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
    return server
