"""What a tool call needs from its host: the runtime (built lazily) and the caller's tenant."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastmcp import FastMCP
from fastmcp.server.auth import AccessToken
from fastmcp.server.dependencies import get_access_token, get_http_headers, get_server

from app.config import Settings

if TYPE_CHECKING:  # the services are imported where first used: `elephant mcp` starts fast
    from app.services.access.auth import Principal
    from app.services.runtime import Elephant


@dataclass(frozen=True)
class McpRuntime:
    """The settings and a getter for the Elephant (the API opens it only at start-up)."""

    settings: Settings
    get_elephant: Callable[[], Elephant]

    @property
    def elephant(self) -> Elephant:
        return self.get_elephant()

    def tenant(self) -> str:
        """With an API key: the key's tenant (an all-tenant admin key may name one in
        X-Elephant-Tenant). Without (stdio, auth.mode local): the header over HTTP, else
        mcp.tenant, else tenant.default."""
        from app.protocol import TENANT_HEADER
        from app.services.access.auth import LOCAL

        header = get_http_headers().get(TENANT_HEADER.lower())
        default = self.settings.mcp.tenant or self.settings.tenant.default
        principal = principal_of(get_access_token())
        return (principal or LOCAL).tenant_for(header, default)


def principal_of(token: AccessToken | None) -> Principal | None:
    """The key behind an MCP request (set by ApiKeyVerifier), or None without keys."""
    if token is None:
        return None
    from app.services.access.auth import Principal

    tenant = token.claims.get("tenant")
    return Principal(
        name=str(token.claims.get("name", "")),
        scopes=frozenset(token.scopes),
        tenant=None if tenant is None else str(tenant),
        prefix=token.client_id,
    )


class ElephantMCP(FastMCP[Any]):
    """A FastMCP server that carries the Elephant runtime for its tools."""

    def __init__(self, runtime: McpRuntime, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.runtime = runtime


def current() -> McpRuntime:
    """The runtime of the server handling this call (tools and resources call this)."""
    server = get_server()
    if not isinstance(server, ElephantMCP):
        raise RuntimeError("not inside an Elephant MCP server")
    return server.runtime
