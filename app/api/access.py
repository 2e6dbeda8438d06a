"""Every request's way in: host, cross-site, media type, size, key, scope, rate, audit.

Each route handler declares what it needs in ``opt={"scope": ...}``: ``public``
(health, the OpenAPI page), ``read``, ``write``, ``admin``, or ``mcp`` (the MCP
mount, whose keys fastmcp checks with the same key store). A handler without a
scope is refused when the app is built, so nothing is open by omission.

In order, for every request that reached a route:
1. the Host header must be an allowed host (421; stops DNS rebinding);
2. a state-changing request from a browser must come from the same origin or a
   configured CORS origin (403), and a body must be JSON (415; a cross-site
   form or ``text/plain`` post cannot pass) and within server.max_body_bytes (413);
3. the API key (auth.mode keys) gives a principal (401), which must hold the
   route's scope and may act for the tenant asked for (403);
4. the key's per-minute budget for that scope (429);
5. admin requests and denials are written to the audit log.

Web console pages (``"console": True`` in ``opt``) take their caller from the session
cookie instead of a bearer key (keyless in local mode), their tenant from the path,
and accept url-encoded forms, whose CSRF token app/console/security.py checks; a GET
without a session is sent to the sign-in form.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from typing import Any, cast
from urllib.parse import urlencode, urlsplit

import anyio.to_thread
from litestar.datastructures import Headers
from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Message, Receive, ReceiveMessage, Scope, Send

from app.config import Settings
from app.errors import (
    ElephantError,
    Forbidden,
    MisdirectedHost,
    PayloadTooLarge,
    RateLimited,
    Unauthorized,
    UnsupportedMediaType,
)
from app.services.access import audit, console_sessions
from app.services.access.auth import (
    LOCAL,
    TENANT_HEADER,
    Principal,
    allowed_hosts,
    authenticate,
    bearer_token,
    host_allowed,
)
from app.services.ops import server_link
from app.services.runtime import Elephant
from app.web.ratelimit import RateLimiter, per_minute

PUBLIC = {"scope": "public"}
READ = {"scope": "read"}
WRITE = {"scope": "write"}
ADMIN = {"scope": "admin"}
# An admin read that changes nothing and is polled (a Prometheus scrape): denials are still
# audited, successes are not (one audit row per scrape would flood the log).
ADMIN_UNAUDITED = {"scope": "admin", "audit": False}
MCP = {"scope": "mcp"}
# Web console pages (app/console): the caller is the session cookie's key, not a bearer
# key, the tenant is the page's path parameter ``tenant_id``, and forms may post.
CONSOLE_PUBLIC = {"scope": "public", "console": True}
CONSOLE_READ = {"scope": "read", "console": True}
CONSOLE_WRITE = {"scope": "write", "console": True}
CONSOLE_ADMIN = {"scope": "admin", "console": True}
ROUTE_SCOPES = frozenset({"public", "read", "write", "admin", "mcp"})
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True)
class Access:
    """What the request may do, stored in the ASGI scope as ``auth``."""

    principal: Principal
    tenant: str


class AccessMiddleware(ASGIMiddleware):
    scopes = (ScopeType.HTTP,)

    def __init__(
        self,
        settings: Settings,
        get_elephant: Callable[[], Elephant],
        bind: str | None = None,
        link_token: str | None = None,
    ) -> None:
        self.settings = settings
        # `elephant serve`'s per-run token for the local CLI (app/services/ops/server_link.py).
        self.link_token = link_token
        self.get_elephant = get_elephant
        self.allowed_hosts = allowed_hosts(settings, bind)
        self.cors_origins = frozenset(settings.server.cors_origins)
        self.limiter = RateLimiter()

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        opt = scope["route_handler"].opt
        required = str(opt.get("scope"))
        console = bool(opt.get("console"))
        headers = Headers.from_scope(scope)
        client = _client(scope)
        receive = _bounded(receive, self.settings.server.max_body_bytes)
        try:
            self._check_request(_method(scope), headers, required, forms=console)
            if required in ("public", "mcp"):  # for /mcp, fastmcp checks key and tool scope
                await next_app(scope, receive, send)
                return
            if console:
                found = await self._console_principal(scope, headers)
                if found is None:
                    await _to_sign_in(scope, send)
                    return
                principal = found
                requested = cast("dict[str, Any]", scope).get("path_params", {}).get("tenant_id")
            else:
                principal = await self._principal(headers, client)
                requested = headers.get(TENANT_HEADER)
        except ElephantError as exc:
            await self._audit_denial(exc, scope, None, client)
            raise
        try:
            tenant = principal.tenant_for(requested, self.settings.tenant.default)
            principal.require(required)
            if principal.prefix is not None:
                self.limiter.take(
                    principal.prefix, required, per_minute(self.settings.auth, required)
                )
        except ElephantError as exc:
            await self._audit_denial(exc, scope, principal, client)
            raise
        scope["auth"] = Access(principal, tenant)
        if required != "admin" or scope["route_handler"].opt.get("audit") is False:
            await next_app(scope, receive, send)
            return
        status: list[int] = []

        async def recording_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
            await send(message)

        try:
            await next_app(scope, receive, recording_send)
        finally:
            code = status[0] if status else 500
            await self._audit(
                tenant=tenant,
                key_prefix=principal.prefix,
                action=f"{_method(scope)} {scope['path']}",
                outcome="ok" if code < 400 else "failed",
                client=client,
                detail={"status": code},
            )

    # ------------------------------------------------------------ checks

    def _check_request(
        self, method: str, headers: Headers, required: str, *, forms: bool = False
    ) -> None:
        """``forms``: a console route, whose browser forms post url-encoded bodies (their
        CSRF token is checked by the console's guard, app/console/security.py)."""
        if required not in ROUTE_SCOPES:
            raise Forbidden("this endpoint declares no access scope")
        if not host_allowed(headers.get("host"), self.allowed_hosts):
            raise MisdirectedHost(
                f"this server does not answer to host {headers.get('host')!r}: add it to "
                "server.allowed_hosts (ELEPHANT_SERVER_ALLOWED_HOSTS)"
            )
        if method not in UNSAFE_METHODS:
            return
        self._check_same_origin(headers)
        length = headers.get("content-length")
        if (
            length is not None
            and length.isdigit()
            and int(length) > self.settings.server.max_body_bytes
        ):
            raise PayloadTooLarge(
                f"the request body is {length} bytes; the limit is "
                f"{self.settings.server.max_body_bytes} (server.max_body_bytes)"
            )
        has_body = (length is not None and length != "0") or "transfer-encoding" in headers
        media = headers.get("content-type", "").split(";")[0].strip().lower()
        if forms and media == "application/x-www-form-urlencoded":
            return
        if has_body and not (media == "application/json" or media.endswith("+json")):
            raise UnsupportedMediaType(
                f"send the body as JSON with 'content-type: application/json' (got {media!r})"
            )

    def _check_same_origin(self, headers: Headers) -> None:
        """Browsers say where a request comes from; other clients send neither header."""
        origin = headers.get("origin")
        fetch_site = headers.get("sec-fetch-site")
        if origin is not None:
            if origin in self.cors_origins:
                return
            parts = urlsplit(origin)
            if origin == "null" or parts.netloc.lower() != headers.get("host", "").lower():
                raise Forbidden(
                    f"cross-site request from origin {origin!r} refused: allow it in "
                    "server.cors_origins if it is yours"
                )
        if fetch_site is not None and fetch_site not in ("same-origin", "none"):
            raise Forbidden(f"cross-site request refused (Sec-Fetch-Site: {fetch_site})")

    async def _principal(self, headers: Headers, client: str | None) -> Principal:
        if server_link.accepts(headers.get("authorization"), client, self.link_token):
            return server_link.principal()
        if self.settings.auth.mode == "local":
            return LOCAL
        token = bearer_token(headers.get("authorization"))
        if token is None:
            return authenticate(self.get_elephant().db, None)  # 401 without a lookup
        # Guessing keys costs a lookup each: the guesser's address has a budget of failures.
        self.limiter.check(client or "?", "denied", self.settings.auth.rate_denied_per_minute)
        db = self.get_elephant().db
        try:
            return await anyio.to_thread.run_sync(authenticate, db, token, client)
        except Unauthorized:
            self.limiter.take(client or "?", "denied", self.settings.auth.rate_denied_per_minute)
            raise

    async def _console_principal(self, scope: Scope, headers: Headers) -> Principal | None:
        """A console page's caller: its session cookie's key (or, keyless, local mode).
        Stores the CSRF token its forms must carry in the scope."""
        if self.settings.auth.mode == "local":
            scope["console_csrf"] = console_sessions.csrf_token(None)  # type: ignore[typeddict-unknown-key]
            return LOCAL
        token = session_cookie(headers)
        if token is None:
            return None
        db = self.get_elephant().db
        principal = await anyio.to_thread.run_sync(console_sessions.session_principal, db, token)
        if principal is not None:
            scope["console_csrf"] = console_sessions.csrf_token(token)  # type: ignore[typeddict-unknown-key]
        return principal

    # ------------------------------------------------------------ audit

    async def _audit_denial(
        self,
        exc: ElephantError,
        scope: Scope,
        principal: Principal | None,
        client: str | None,
    ) -> None:
        if isinstance(exc, RateLimited) or exc.status_code not in (401, 403):
            return  # floods are not logged row by row
        await self._audit(
            tenant=principal.tenant if principal else None,
            key_prefix=principal.prefix if principal else None,
            action=f"{_method(scope)} {scope['path']}",
            outcome="denied",
            client=client,
            detail={"status": exc.status_code, "reason": exc.code},
        )

    async def _audit(self, **entry: Any) -> None:
        db = self.get_elephant().db
        await anyio.to_thread.run_sync(lambda: audit.record(db, **entry))


def _method(scope: Scope) -> str:
    return str(cast("dict[str, Any]", scope).get("method", ""))


def _client(scope: Scope) -> str | None:
    client = scope.get("client")
    return str(client[0]) if client else None


def session_cookie(headers: Headers) -> str | None:
    """The console session token from the Cookie header, if any."""
    jar = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except CookieError:
        return None
    morsel = jar.get(console_sessions.COOKIE)
    return morsel.value if morsel is not None and morsel.value else None


async def _to_sign_in(scope: Scope, send: Send) -> None:
    """A console page without a session: a GET goes to the sign-in form (and comes back),
    anything else is refused."""
    if _method(scope) not in ("GET", "HEAD"):
        raise Unauthorized("sign in to the console first (your session ended)")
    target = scope["path"] + (
        "?" + scope["query_string"].decode("latin-1") if scope["query_string"] else ""
    )
    location = "/ui/login?" + urlencode({"next": target})
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [(b"location", location.encode("latin-1")), (b"content-length", b"0")],
        }
    )
    await send({"type": "http.response.body", "body": b"", "more_body": False})


def _bounded(receive: Receive, limit: int) -> Receive:
    """Count body bytes as they arrive (chunked bodies have no content-length)."""
    seen = 0

    async def bounded_receive() -> ReceiveMessage:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise PayloadTooLarge(
                    f"the request body exceeds {limit} bytes (server.max_body_bytes)"
                )
        return message

    return bounded_receive


def check_route_scopes(handlers: list[tuple[str, dict[str, Any]]]) -> None:
    """Fail at start-up if a route forgot to say who may call it."""
    missing = [path for path, opt in handlers if opt.get("scope") not in ROUTE_SCOPES]
    if missing:
        raise RuntimeError(f"routes without an access scope: {', '.join(sorted(missing))}")
