"""A request id on every response (X-Request-Id) and on every log line of the request, so
a 5xx in a client's log can be found in the server's: the id a proxy sent is kept when it
is plain, else a new one is made."""

from __future__ import annotations

import re
import uuid
from typing import Any, cast

from litestar.datastructures import MutableScopeHeaders
from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from app import logs

HEADER = "x-request-id"
_PLAIN = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def request_id(scope: Scope) -> str:
    """This request's id, made on first use."""
    state = cast("dict[str, Any]", scope).setdefault("state", {})
    found = state.get("request_id")
    if found is None:
        incoming = _incoming(scope)
        found = state["request_id"] = incoming or uuid.uuid4().hex[:16]
    return str(found)


def _incoming(scope: Scope) -> str | None:
    for name, value in cast("dict[str, Any]", scope).get("headers", []):
        if name == HEADER.encode():
            text = bytes(value).decode("latin-1")
            return text if _PLAIN.match(text) else None
    return None


async def add_request_id(message: Message, scope: Scope) -> None:
    """before_send hook: every response, errors included, says which request it answers
    (and so does the access line, even for a path no route matched)."""
    if message["type"] == "http.response.start":
        rid = request_id(scope)
        MutableScopeHeaders(message)[HEADER] = rid
        if "request_id" not in logs.current_fields():
            logs.bind(request_id=rid)  # this task is the request's: it ends with it


class RequestLogContext(ASGIMiddleware):
    """Binds the request id to every line logged while the request runs."""

    scopes = (ScopeType.HTTP,)

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        with logs.bound(request_id=request_id(scope)):
            await next_app(scope, receive, send)
