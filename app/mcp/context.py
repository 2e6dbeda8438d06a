"""What a tool call needs from its host: the runtime (built lazily) and the caller's tenant."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastmcp import FastMCP
from fastmcp.server.dependencies import get_http_headers, get_server

from app.config import Settings, validate_tenant_id
from app.errors import InvalidInput
from app.services.runtime import Elephant

TENANT_HEADER = "X-Elephant-Tenant"


@dataclass(frozen=True)
class McpRuntime:
    """The settings and a getter for the Elephant (the API opens it only at start-up)."""

    settings: Settings
    get_elephant: Callable[[], Elephant]

    @property
    def elephant(self) -> Elephant:
        return self.get_elephant()

    def tenant(self) -> str:
        """The X-Elephant-Tenant header over HTTP, else mcp.tenant, else tenant.default."""
        header = get_http_headers().get(TENANT_HEADER.lower())
        value = header or self.settings.mcp.tenant or self.settings.tenant.default
        try:
            return validate_tenant_id(value)
        except ValueError as exc:
            raise InvalidInput(f"{TENANT_HEADER}: {exc}") from None


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
