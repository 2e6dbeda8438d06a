"""What keeps the console's pages safe in a browser: CSRF tokens on forms, and headers
that forbid framing, caching and any script, style or request from another origin.

Referrer-Policy is same-origin, not no-referrer: with no-referrer Chrome sends
``Origin: null`` on the console's own form posts, which the same-origin check refuses."""

from __future__ import annotations

from typing import Any

from litestar.connection import ASGIConnection
from litestar.datastructures import ResponseHeader
from litestar.handlers.base import BaseRouteHandler
from litestar.types import Method

from app.errors import Forbidden
from app.web.cookies import csrf_matches

CSRF_FIELD = "csrf"
UNSAFE: frozenset[Method | str] = frozenset({"POST", "PUT", "PATCH", "DELETE"})

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
RESPONSE_HEADERS = [
    ResponseHeader(name="Content-Security-Policy", value=CONTENT_SECURITY_POLICY),
    ResponseHeader(name="X-Frame-Options", value="DENY"),
    ResponseHeader(name="X-Content-Type-Options", value="nosniff"),
    ResponseHeader(name="Referrer-Policy", value="same-origin"),
    ResponseHeader(name="Cache-Control", value="no-store"),
]


async def csrf_guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """A signed-in form post must carry the session's CSRF token (the sign-in form, which
    has no session yet, is public and checked by origin alone)."""
    if connection.scope.get("method") not in UNSAFE:
        return
    expected = connection.scope.get("console_csrf")  # set by AccessMiddleware
    if expected is None:
        return  # a public console route
    from litestar import Request

    form = await Request[Any, Any, Any](connection.scope, connection.receive).form()
    presented = form.get(CSRF_FIELD)
    if not csrf_matches(str(expected), presented if isinstance(presented, str) else None):
        raise Forbidden(
            "this form is stale or came from another site (CSRF token missing or wrong): "
            "reload the page and submit it again"
        )
