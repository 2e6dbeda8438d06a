"""The access log: one line per HTTP request, naming the route, never what the URL carried.

A URL carries what a caller asks and about whom: ``GET /search?q=where+does+Ines+work``,
``/memories/<id>``, ``/keys/<prefix>/revoke``. Once written to a log file such a line
outlives an erasure of the subject, so an access line holds the method, the route
template (``GET /search``, ``GET /memories/{memory_id}``, ``POST /mcp``; ``unmatched``
when no route answered), the status and the milliseconds to the response's start:

```
2025-06-01T10:00:00.123+00:00 INFO app.access [request_id=4f1c0a9e2b7d4e11]: GET /search 200 41.2ms
```

Only ``log.access_detail`` (a debugging setting, off by default) adds the path as sent,
query string included, and the client's address. uvicorn's own access line (the path
as sent, with its query) is switched off where we run uvicorn and dropped by the logging
set-up (app.logs) wherever else it would reach our handler.

The line is written as the response starts, from the task that sends it, so it carries
the fields bound to the request (its id; for MCP the JSON-RPC method and tool). The
Litestar app writes it from a ``before_send`` hook (:func:`access_hook`); an app that is
not Litestar (``elephant mcp --http``) is wrapped in :class:`AccessLog`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from litestar.types import Message, Scope
from starlette.types import ASGIApp, Receive, Send
from starlette.types import Message as AnyMessage

ACCESS_LOGGER = "app.access"
UNMATCHED = "unmatched"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
STARTED = "request_started"  # scope["state"] key: perf_counter() when a route took the request

log = logging.getLogger(ACCESS_LOGGER)


def route_template(scope: Mapping[str, Any]) -> str:
    """The template of the route that answered (a mount's path for a mounted app, whose
    template Litestar leaves empty); ``unmatched`` when no route did."""
    if scope.get("path_template"):
        return str(scope["path_template"])
    handler = scope.get("route_handler")
    if handler is not None and getattr(handler, "is_mount", False):
        return str(min(handler.paths))
    return UNMATCHED


def method_of(scope: Mapping[str, Any]) -> str:
    """The request's method, or ``other`` for one outside HTTP's usual set."""
    method = str(scope.get("method", "")).upper()
    return method if method in METHODS else "other"


def started_at(scope: Mapping[str, Any]) -> float | None:
    """When a route took the request (``mark_start``), if one did."""
    state = scope.get("state") or {}
    value = state.get(STARTED)
    return value if isinstance(value, float) else None


def mark_start(scope: Scope) -> None:
    """Note now as the request's start (the access line's and the latency metric's)."""
    scope.setdefault("state", {})[STARTED] = time.perf_counter()


def write_line(
    scope: Mapping[str, Any], status: int, started: float | None, *, detail: bool, template: str
) -> None:
    """One access line: method, ``template``, status, milliseconds since ``started``;
    with ``detail`` also the path as sent with its query string, and the client."""
    elapsed = "" if started is None else f" {(time.perf_counter() - started) * 1000:.1f}ms"
    line = f"{method_of(scope)} {template} {status}{elapsed}"
    if detail:
        line += f" (sent: {_as_sent(scope)} from {_client(scope)})"
    log.info("%s", line)


def _as_sent(scope: Mapping[str, Any]) -> str:
    path = scope.get("raw_path")
    text = path.decode("latin-1") if isinstance(path, bytes) else str(scope.get("path", ""))
    query = scope.get("query_string") or b""
    return f"{text}?{bytes(query).decode('latin-1')}" if query else text


def _client(scope: Mapping[str, Any]) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "unknown"


def access_hook(*, detail: bool) -> Callable[[Message, Scope], Awaitable[None]]:
    """The Litestar app's ``before_send`` hook that writes the access line (after the hook
    that binds the request id)."""

    async def write_access_line(message: Message, scope: Scope) -> None:
        if message["type"] == "http.response.start":
            status = int(message["status"])
            write_line(
                scope, status, started_at(scope), detail=detail, template=route_template(scope)
            )

    return write_access_line


class AccessLog:
    """Wraps an ASGI app that is not Litestar (``elephant mcp --http``): its access lines,
    by the ``routes`` it serves (a path that is none of them is ``unmatched``)."""

    def __init__(self, app: ASGIApp, routes: frozenset[str], *, detail: bool) -> None:
        self.app = app
        self.routes = routes
        self.detail = detail

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        path = str(scope.get("path", "")).rstrip("/") or "/"
        template = path if path in self.routes else UNMATCHED

        async def logged(message: AnyMessage) -> None:
            if message["type"] == "http.response.start":
                status = int(message["status"])
                write_line(scope, status, started, detail=self.detail, template=template)
            await send(message)

        await self.app(scope, receive, logged)
