"""Every request's way in: transport, caller, permission, audit.

Each route handler declares a :class:`~app.web.route_access.RouteAccess` (who may call
it). For every request that reached a route, :class:`AccessMiddleware` takes these steps
in order, each a method below:

1. ``guard_transport``: the Host header must be an allowed host (421; stops DNS
   rebinding); a state-changing request from a browser must come from the same origin
   or a configured CORS origin (403), and a body must be JSON (415; a cross-site form
   or ``text/plain`` post cannot pass) and within server.max_body_bytes (413). Public
   routes and the MCP mount (fastmcp checks its keys) then go straight to the handler;
2. ``authenticate``: the API key (auth.mode keys) or the CLI's link token gives a
   principal (401); a console page takes its caller from the session cookie instead
   (keyless in local mode), and a GET without a session is sent to the sign-in form;
3. ``authorize``: the principal must hold the route's scope and may act for the tenant
   asked for (403: the tenant header, or a console page's path), within its key's
   per-minute budget for that scope (429);
4. ``run_and_audit``: the handler runs; admin requests are written to the audit log
   with their outcome, as are denials (401, 403) of any step.

Console forms post url-encoded bodies; their CSRF token, which step 2 stores in the
scope, is checked by the console's guard (app/console/security.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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
from app.protocol import TENANT_HEADER
from app.services.access import audit, console_sessions
from app.services.access.auth import LOCAL, Principal, authenticate
from app.services.ops import server_link
from app.services.runtime import Elephant
from app.web.bearer import bearer_token
from app.web.cookies import csrf_token, read_session_token
from app.web.failed_auth import FailedAuthGuard
from app.web.hosts import allowed_hosts, host_allowed
from app.web.ratelimit import RateLimiter, per_minute
from app.web.route_access import RouteAccess, route_access

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
FORM_MEDIA = "application/x-www-form-urlencoded"


@dataclass(frozen=True)
class Access:
    """What the request may do, stored in the ASGI scope as ``auth``."""

    principal: Principal
    tenant: str

    def reach(self, all_tenants: bool, what: str) -> str | None:
        """The tenant an admin request acts on: the one it acts for (an all-tenant key
        names it), or None (every tenant) when an all-tenant key sends all_tenants=true."""
        if not all_tenants:
            return self.tenant
        if self.principal.tenant is not None:
            raise Forbidden(f"only an all-tenant admin key may {what} (all_tenants=true)")
        return None


@dataclass(frozen=True)
class _Request:
    """One request as the steps see it."""

    scope: Scope
    headers: Headers
    client: str | None  # the peer's address, or the client a trusted proxy names

    @classmethod
    def of(cls, scope: Scope) -> _Request:
        client = scope.get("client")
        return cls(scope, Headers.from_scope(scope), str(client[0]) if client else None)

    @property
    def method(self) -> str:
        return _method(self.scope)

    @property
    def action(self) -> str:
        """How the audit log names the request."""
        return f"{self.method} {self.scope['path']}"

    @property
    def path_tenant(self) -> str | None:
        """A console page's tenant: its path parameter ``tenant_id``."""
        params = cast("dict[str, Any]", self.scope).get("path_params", {})
        return cast("str | None", params.get("tenant_id"))


class AccessMiddleware(ASGIMiddleware):
    scopes = (ScopeType.HTTP,)

    def __init__(
        self,
        settings: Settings,
        get_elephant: Callable[[], Elephant],
        bind: str | None = None,
        link_token: str | None = None,
        failed_auth: FailedAuthGuard | None = None,
    ) -> None:
        self.settings = settings
        # `elephant serve`'s per-run token for the local CLI (app/services/ops/server_link.py).
        self.link_token = link_token
        self.get_elephant = get_elephant
        self.allowed_hosts = allowed_hosts(settings, bind)
        self.cors_origins = frozenset(settings.server.cors_origins)
        self.limiter = RateLimiter()
        # Failed key checks: shared with the MCP mount's gate (one budget per process).
        self.failed_auth = failed_auth or FailedAuthGuard(settings.auth)

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        request = _Request.of(scope)
        receive = _bounded(receive, self.settings.server.max_body_bytes)
        principal: Principal | None = None
        try:
            route = self.declared(request)
            self.guard_transport(request, route)
            if not route.checks_caller:
                await next_app(scope, receive, send)
                return
            principal = await self.authenticate(request, route)
            if principal is None:
                await _to_sign_in(scope, send)
                return
            access = self.authorize(request, route, principal)
        except ElephantError as exc:
            await self.audit_denial(exc, request, principal)
            raise
        scope["auth"] = access
        await self.run_and_audit(request, route, access, next_app, receive, send)

    # ------------------------------------------------------------ the steps

    @staticmethod
    def declared(request: _Request) -> RouteAccess:
        """The route's declared access. The app refuses to start with a route that declares
        none (check_route_access); this refuses a request to one added later."""
        route = route_access(request.scope["route_handler"])
        if route is None:
            raise Forbidden("this endpoint declares no access scope")
        return route

    def guard_transport(self, request: _Request, route: RouteAccess) -> None:
        """Refuse what no caller should send, before anyone is looked up: a foreign Host
        (DNS rebinding: another site's name resolved to this server), a cross-site
        state-changing request (a page elsewhere using the browser's cookies or its reach
        to loopback), a body over the size limit, or a body that is not JSON (a cross-site
        form or ``text/plain`` post needs no CORS preflight; JSON does). Console pages
        accept url-encoded forms, whose CSRF token the console's guard checks."""
        headers = request.headers
        if not host_allowed(headers.get("host"), self.allowed_hosts):
            raise MisdirectedHost(
                f"this server does not answer to host {headers.get('host')!r}: add it to "
                "server.allowed_hosts (ELEPHANT_SERVER_ALLOWED_HOSTS)"
            )
        if request.method not in UNSAFE_METHODS:
            return
        self._check_same_origin(headers)
        length = headers.get("content-length")
        limit = self.settings.server.max_body_bytes
        if length is not None and length.isdigit() and int(length) > limit:
            raise PayloadTooLarge(
                f"the request body is {length} bytes; the limit is {limit} (server.max_body_bytes)"
            )
        has_body = (length is not None and length != "0") or "transfer-encoding" in headers
        media = headers.get("content-type", "").split(";")[0].strip().lower()
        if route.console and media == FORM_MEDIA:
            return
        if has_body and not (media == "application/json" or media.endswith("+json")):
            raise UnsupportedMediaType(
                f"send the body as JSON with 'content-type: application/json' (got {media!r})"
            )

    async def authenticate(self, request: _Request, route: RouteAccess) -> Principal | None:
        """Who is calling: a console page's session, else the bearer credential. None: a
        console page without a live session (the caller is sent to sign in)."""
        if route.console:
            return await self._session_principal(request)
        return await self._key_principal(request)

    def authorize(self, request: _Request, route: RouteAccess, principal: Principal) -> Access:
        """Whether this caller may do this, here, now: the tenant it acts for (its key's
        own; an all-tenant key names one), the route's scope, and its key's per-minute
        budget for that scope (one key cannot starve the others)."""
        requested = request.path_tenant if route.console else request.headers.get(TENANT_HEADER)
        tenant = principal.tenant_for(requested, self.settings.tenant.default)
        principal.require(route.scope)
        if principal.prefix is not None:
            self.limiter.take(
                principal.prefix, route.scope, per_minute(self.settings.auth, route.scope)
            )
        return Access(principal, tenant)

    async def run_and_audit(
        self,
        request: _Request,
        route: RouteAccess,
        access: Access,
        next_app: ASGIApp,
        receive: Receive,
        send: Send,
    ) -> None:
        """Run the handler. An admin request (keys, deletes, erasure, thresholds) is written
        to the audit log with the status it got, so an operator can tell who changed what."""
        if not route.audits_success:
            await next_app(request.scope, receive, send)
            return
        status: list[int] = []

        async def recording_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
            await send(message)

        try:
            await next_app(request.scope, receive, recording_send)
        finally:
            code = status[0] if status else 500
            await self._audit(
                tenant=access.tenant,
                key_prefix=access.principal.prefix,
                action=request.action,
                outcome="ok" if code < 400 else "failed",
                client=request.client,
                detail={"status": code},
            )

    async def audit_denial(
        self, exc: ElephantError, request: _Request, principal: Principal | None
    ) -> None:
        """A refused key or scope (401, 403) is written to the audit log: probing leaves a
        trail. Floods (429) and malformed requests are not logged row by row."""
        if isinstance(exc, RateLimited) or exc.status_code not in (401, 403):
            return
        await self._audit(
            tenant=principal.tenant if principal else None,
            key_prefix=principal.prefix if principal else None,
            action=request.action,
            outcome="denied",
            client=request.client,
            detail={"status": exc.status_code, "reason": exc.code},
        )

    # ------------------------------------------------------------ helpers of the steps

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

    async def _key_principal(self, request: _Request) -> Principal:
        """The CLI's link token (loopback only), keyless local mode, or an API key."""
        token = bearer_token(request.headers.get("authorization"))
        client = request.client
        if server_link.accepts(token, client, self.link_token):
            return server_link.principal()
        if self.settings.auth.mode == "local":
            return LOCAL
        if token is None:
            return authenticate(self.get_elephant().db, None)  # 401 without a lookup
        # Guessing keys costs a lookup each: failures have a budget per address and key
        # prefix, shared with MCP over HTTP (app/web/failed_auth.py).
        return await self.failed_auth.authenticate(self.get_elephant().db, token, client)

    async def _session_principal(self, request: _Request) -> Principal | None:
        """A console page's caller: its session cookie's key (or, keyless, local mode).
        Stores the CSRF token its forms must carry in the scope."""
        scope = request.scope
        if self.settings.auth.mode == "local":
            scope["console_csrf"] = csrf_token(None)  # type: ignore[typeddict-unknown-key]
            return LOCAL
        token = read_session_token(request.headers)
        if token is None:
            return None
        db = self.get_elephant().db
        principal = await anyio.to_thread.run_sync(console_sessions.session_principal, db, token)
        if principal is not None:
            scope["console_csrf"] = csrf_token(token)  # type: ignore[typeddict-unknown-key]
        return principal

    async def _audit(self, **entry: Any) -> None:
        db = self.get_elephant().db
        await anyio.to_thread.run_sync(lambda: audit.record(db, **entry))


def _method(scope: Scope) -> str:
    return str(cast("dict[str, Any]", scope).get("method", ""))


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
