"""The error shape for responses no exception handler wrote.

app/api/errors.py shapes every error raised inside Litestar. A few 4xx/5xx
responses are written by other code: the OpenAPI controller's HTML 404
(``/schema/nope``), the mounted MCP app's plain-text 404 and 405
(``/mcp/nope``) and its 401s (an empty body, or OAuth's ``{"error",
"error_description"}``).
This middleware rewrites such a response into ``{"error", "message"}`` with the
same status and headers. JSON-RPC error bodies from the MCP endpoint are left as
they are (an MCP client reads them), and so is any body already in our shape and
any other JSON object (a report such as /health's 503 answer).
"""

from __future__ import annotations

import json
from typing import Any, cast

from litestar.datastructures import MutableScopeHeaders
from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import (
    ASGIApp,
    HTTPResponseBodyEvent,
    HTTPResponseStartEvent,
    Message,
    Receive,
    Scope,
    Send,
)
from litestar.types.asgi_types import HeaderScope

from app.api.errors import error_code
from app.protocol import JSONObject

CONSOLE_PATH = "/ui"
MAX_TEXT_MESSAGE = 300  # a short plain-text body is kept as the message; longer: the phrase


class ErrorShape(ASGIMiddleware):
    scopes = (ScopeType.HTTP,)

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        if scope.get("method") == "HEAD" or scope["path"].startswith(CONSOLE_PATH + "/"):
            # no body to shape, or the web console's HTML error pages
            await next_app(scope, receive, send)
            return
        held: list[HTTPResponseStartEvent] = []  # an error's start, while its body arrives
        chunks: list[bytes] = []

        async def shaping_send(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] >= 400:
                held.append(message)
                return
            if message["type"] != "http.response.body" or not held:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            start = held.pop()
            original = b"".join(chunks)
            body = _shaped(start["status"], _media(start), original)
            if body is not None:
                headers = MutableScopeHeaders(cast("HeaderScope", start))
                headers["content-type"] = "application/json"
                headers["content-length"] = str(len(body))
            await send(start)
            ending: HTTPResponseBodyEvent = {
                "type": "http.response.body",
                "body": original if body is None else body,
                "more_body": False,
            }
            await send(ending)

        await next_app(scope, receive, shaping_send)


def _media(start: HTTPResponseStartEvent) -> str:
    for name, value in start.get("headers", []):
        if bytes(name).lower() == b"content-type":
            return bytes(value).decode("latin-1").split(";")[0].strip().lower()
    return ""


def _shaped(status: int, media: str, body: bytes) -> bytes | None:
    """The body in our shape, or None when it already is one (or is JSON-RPC)."""
    code = error_code(status)
    if media == "application/json" or media.endswith("+json"):
        try:
            found: Any = json.loads(body)
        except ValueError:
            found = None
        if isinstance(found, dict):
            if "jsonrpc" in found or {"error", "message"} <= found.keys():
                return None
            described = found.get("error_description")
            if isinstance(found.get("error"), str) and isinstance(described, str):
                return _encode({**found, "message": described})  # OAuth: keep its fields
            if {"status_code", "detail"} <= found.keys():  # Litestar's own shape
                return _encode({"error": code, "message": str(found["detail"])})
            return None  # a report of our own that a 4xx/5xx carries (/health's 503)
        return _encode({"error": code, "message": _phrase(status)})
    text = body.decode("utf-8", errors="replace").strip()
    plain = media in ("text/plain", "") and 0 < len(text) <= MAX_TEXT_MESSAGE and text.isprintable()
    return _encode({"error": code, "message": text if plain else _phrase(status)})


def _phrase(status: int) -> str:
    if status == 401:
        return "this needs an API key: send 'Authorization: Bearer ek_...'"
    return error_code(status).replace("_", " ")


def _encode(content: JSONObject) -> bytes:
    return json.dumps(content, separators=(",", ":")).encode()
