"""MCP over streamable HTTP: bearer-token check, exposure rule, the ASGI app.

The same app serves ``elephant mcp --http`` (at /mcp) and the API's mount at
/mcp (the mount strips the prefix, so there it answers at /). Requests must
carry ``Authorization: Bearer <mcp.token>`` when a token is configured; serving
on anything but a loopback address without a token is refused. The Host/Origin
guard of fastmcp protects loopback servers from DNS rebinding.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Callable

from fastmcp.server.auth import AccessToken, TokenVerifier
from fastmcp.server.http import StarletteWithLifespan

from app.config import Settings
from app.errors import ConfigError
from app.mcp.context import ElephantMCP
from app.mcp.server import build_server
from app.services.runtime import Elephant


class BearerToken(TokenVerifier):
    """Accepts exactly one shared secret (mcp.token), compared in constant time."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self._token = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        if not hmac.compare_digest(token.encode(), self._token):
            return None
        return AccessToken(token="<redacted>", client_id="elephant-mcp", scopes=[])  # noqa: S106


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(settings: Settings, host: str, *, where: str, alternative: str = "") -> None:
    """Refuse MCP over HTTP on a non-loopback address unless a token is configured."""
    if settings.mcp.token is None and not is_loopback(host):
        raise ConfigError(
            f"{where} would serve MCP over HTTP on {host}, which is not a loopback address, "
            "without a token. Set mcp.token (ELEPHANT_MCP_TOKEN, e.g. `openssl rand -hex 32`) "
            "so clients must send 'Authorization: Bearer <token>', or bind a loopback address "
            f"such as 127.0.0.1{alternative}."
        )


def build_http_server(settings: Settings, get_elephant: Callable[[], Elephant]) -> ElephantMCP:
    token = settings.mcp.token
    return build_server(settings, get_elephant, auth=BearerToken(token) if token else None)


def http_app(server: ElephantMCP, path: str) -> StarletteWithLifespan:
    """The streamable-HTTP ASGI app; run its ``lifespan`` (the session manager) with it."""
    return server.http_app(path=path, transport="http", host_origin_protection="auto")
