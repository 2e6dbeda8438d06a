"""MCP over streamable HTTP: API keys, the exposure rule, the ASGI app.

The same app serves ``elephant mcp --http`` (at /mcp) and the API's mount at
/mcp (the mount strips the prefix, so there it answers at /). With auth.mode
keys (the default) every request carries ``Authorization: Bearer <API key>``,
the same keys as REST: the key decides the session's tenant and each tool
needs its scope (read tools: read; writes: write; deletes: admin). Keyless
(auth.mode local) serving is refused on anything but a loopback address. The
Host/Origin guard of fastmcp protects loopback servers from DNS rebinding.

With keys, :class:`KeyGate` stands in front of fastmcp and checks the bearer key as
REST does: against the process's failed-auth budget (app/web/failed_auth.py, shared
with REST in the API: 401, then 429 with Retry-After), writing a 'denied' audit row
per refusal. fastmcp's verifier (which never sees the client's address) then takes the
principal the gate verified instead of looking the key up again.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any
from urllib.parse import unquote

import anyio.to_thread
from fastmcp.server.auth import AccessToken, TokenVerifier
from fastmcp.server.http import StarletteWithLifespan
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.config import Settings
from app.errors import ElephantError, RateLimited, Unauthorized, retry_headers
from app.mcp.context import ElephantMCP
from app.mcp.server import build_server
from app.services.access import audit
from app.services.access.auth import Principal, authenticate
from app.services.runtime import Elephant
from app.web.access_log import AccessLog
from app.web.bearer import bearer_token
from app.web.failed_auth import FailedAuthGuard
from app.web.proxies import behind_proxies

# The key KeyGate verified for the request being handled, and its principal: fastmcp's
# verifier runs in the same task, below the gate, and is handed only the token.
_verified: ContextVar[tuple[str, Principal] | None] = ContextVar("mcp_verified", default=None)


class ApiKeyVerifier(TokenVerifier):
    """Checks a bearer token against the API keys; the claims carry the key's tenant."""

    def __init__(self, get_elephant: Callable[[], Elephant]) -> None:
        super().__init__()
        self._get_elephant = get_elephant

    async def verify_token(self, token: str) -> AccessToken | None:
        verified = _verified.get()
        if verified is not None and hmac.compare_digest(verified[0], token.strip()):
            principal = verified[1]  # KeyGate looked it up a moment ago
        else:  # no gate in front (or a header it read otherwise): look the key up
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


class KeyGate:
    """ASGI wrapper in front of the MCP app (auth.mode keys): a presented bearer key is
    checked here, where the client's address is known, within the failed-auth budget
    shared with REST. A refused key gets a 401 (``WWW-Authenticate: Bearer``) and a
    'denied' audit row naming the MCP path, the client and the reason; a spent budget a
    429 with Retry-After (not audited, as on REST), both ``{"error", "message"}``. A
    request without a key goes on to fastmcp, whose 401 challenge is audited the same way.
    """

    def __init__(
        self, app: ASGIApp, get_elephant: Callable[[], Elephant], guard: FailedAuthGuard
    ) -> None:
        self.app = app
        self.get_elephant = get_elephant
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan (standalone), websockets: not ours
            await self.app(scope, receive, send)
            return
        token = bearer_token(_header(scope, b"authorization"))
        client = scope["client"][0] if scope.get("client") else None
        if token is None:
            await self.app(scope, receive, self._auditing_401(scope, client, send))
            return
        try:
            principal = await self.guard.authenticate(self.get_elephant().db, token, client)
        except RateLimited as exc:
            await _refuse(exc, send)
            return
        except Unauthorized as exc:
            await self._audit_denial(scope, client, exc.code)
            await _refuse(exc, send)
            return
        handed = _verified.set((token, principal))
        try:
            await self.app(scope, receive, send)
        finally:
            _verified.reset(handed)

    def _auditing_401(self, scope: Scope, client: str | None, send: Send) -> Send:
        async def auditing_send(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 401:
                await self._audit_denial(scope, client, Unauthorized.code)
            await send(message)

        return auditing_send

    async def _audit_denial(self, scope: Scope, client: str | None, reason: str) -> None:
        db = self.get_elephant().db
        entry: dict[str, Any] = {
            "tenant": None,
            "key_prefix": None,
            "action": f"{scope.get('method', '')} {_path_as_sent(scope)}",
            "outcome": "denied",
            "client": client,
            "detail": {"status": 401, "reason": reason},
        }
        await anyio.to_thread.run_sync(lambda: audit.record(db, **entry))


def gated(
    app: ASGIApp, settings: Settings, get_elephant: Callable[[], Elephant], guard: FailedAuthGuard
) -> ASGIApp:
    """The MCP app behind a KeyGate with auth.mode keys; as it is without keys."""
    return KeyGate(app, get_elephant, guard) if settings.auth.mode == "keys" else app


def standalone_app(
    settings: Settings, get_elephant: Callable[[], Elephant], *, log_access: bool = False
) -> ASGIApp:
    """`elephant mcp --http`'s app: MCP at /mcp, behind the gate (with keys) and the
    process's own failed-auth budget, the client's address read from trusted proxies
    (app/web/proxies.py). ``log_access``: an access line per request (app/web/access_log.py),
    inside the proxies' middleware so that it names the client, not the proxy. uvicorn
    runs its lifespan."""
    mcp = http_app(build_http_server(settings, get_elephant), path="/mcp")
    app = gated(mcp, settings, get_elephant, FailedAuthGuard(settings.auth))
    if log_access:
        app = AccessLog(app, frozenset({"/mcp"}), detail=settings.log.access_detail)
    return behind_proxies(settings.auth)(app)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _path_as_sent(scope: Scope) -> str:
    """The path the client asked for (a mount hands the app the path without its prefix)."""
    raw = scope.get("raw_path")
    if isinstance(raw, bytes):
        return unquote(raw.decode("latin-1"))
    return str(scope.get("root_path", "")) + str(scope.get("path", ""))


async def _refuse(exc: ElephantError, send: Send) -> None:
    """A 401 or 429 in the shape of every other error of the API."""
    body = json.dumps(exc.to_dict()).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if isinstance(exc, Unauthorized):
        headers.append((b"www-authenticate", b'Bearer realm="elephant", error="invalid_token"'))
    headers += [
        (name.lower().encode(), value.encode()) for name, value in retry_headers(exc).items()
    ]
    await send({"type": "http.response.start", "status": exc.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
