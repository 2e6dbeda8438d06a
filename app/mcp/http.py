"""MCP over streamable HTTP: API keys, the exposure rule, the ASGI app.

The same app serves ``elephant mcp --http`` (at /mcp) and the API's mount at
/mcp (the mount strips the prefix, so there it answers at /). With auth.mode
keys (the default) every request carries ``Authorization: Bearer <API key>``,
the same keys as REST: the key decides the session's tenant and each tool
needs its scope (read tools: read; writes: write; deletes: admin). Keyless
(auth.mode local) serving is refused on anything but a loopback address. The
Host/Origin guard of fastmcp protects loopback servers from DNS rebinding.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio.to_thread
from fastmcp.server.auth import AccessToken, TokenVerifier
from fastmcp.server.http import StarletteWithLifespan

from app.config import Settings
from app.errors import Unauthorized
from app.mcp.context import ElephantMCP
from app.mcp.server import build_server
from app.services.access.auth import authenticate
from app.services.runtime import Elephant


class ApiKeyVerifier(TokenVerifier):
    """Checks a bearer token against the API keys; the claims carry the key's tenant."""

    def __init__(self, get_elephant: Callable[[], Elephant]) -> None:
        super().__init__()
        self._get_elephant = get_elephant

    async def verify_token(self, token: str) -> AccessToken | None:
        db = self._get_elephant().db
        try:
            principal = await anyio.to_thread.run_sync(authenticate, db, token)
        except Unauthorized:
            return None
        return AccessToken(
            token="<redacted>",  # noqa: S106
            client_id=principal.prefix or principal.name,
            scopes=sorted(principal.scopes),
            claims={"tenant": principal.tenant, "name": principal.name},
        )


def build_http_server(settings: Settings, get_elephant: Callable[[], Elephant]) -> ElephantMCP:
    keys = settings.auth.mode == "keys"
    return build_server(settings, get_elephant, auth=ApiKeyVerifier(get_elephant) if keys else None)


def http_app(server: ElephantMCP, path: str) -> StarletteWithLifespan:
    """The streamable-HTTP ASGI app; run its ``lifespan`` (the session manager) with it."""
    return server.http_app(path=path, transport="http", host_origin_protection="auto")
