"""One exception family for everything the client raises.

The server answers every error as ``{"error": code, "message": text, "details"?}``
with its HTTP status; the class is chosen by status, so ``except NotFound`` works
whatever code a newer server uses, and ``code`` keeps the server's exact word.
"""

from __future__ import annotations

from typing import Any


class ElephantError(Exception):
    """Base of every client error. ``status`` is the HTTP status (None when no response
    arrived), ``code`` the server's error code, ``details`` its extra fields,
    ``request_id`` the X-Request-Id to find the request in the server's log,
    ``retry_after`` the seconds the server asked to wait (Retry-After, on 429 and 503)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str = "error",
        details: dict[str, Any] | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.details = details or {}
        self.request_id = request_id
        self.retry_after = retry_after

    def __str__(self) -> str:
        where = f"{self.status} {self.code}" if self.status is not None else self.code
        return f"{where}: {self.message}"


class InvalidInput(ElephantError):
    """400, 413, 415, 422: the request was refused; the message says what to fix."""


class Unauthorized(ElephantError):
    """401: no API key, or one that is unknown, revoked or expired."""


class Forbidden(ElephantError):
    """403: the key lacks the scope, or may not act for the tenant named."""


class NotFound(ElephantError):
    """404: no such record (in this tenant), or no such path on this server."""


class Conflict(ElephantError):
    """409: the request conflicts with the current state."""


class RateLimited(ElephantError):
    """429: the key's per-minute budget is spent; ``retry_after`` says for how long."""


class ServerError(ElephantError):
    """5xx other than 503: a bug or an outage on the server (see ``request_id``)."""


class Unavailable(ServerError):
    """503: the database or a model is not available now; ``retry_after`` when known."""


class ConnectionFailed(ElephantError):
    """No response: the server could not be reached, or the connection broke or timed out."""


class InvalidResponse(ElephantError):
    """A response the client cannot read (not JSON, or not the documented shape)."""

    def __init__(self, message: str, **kwargs: Any) -> None:
        kwargs.setdefault("code", "invalid_response")
        super().__init__(message, **kwargs)


_BY_STATUS: dict[int, type[ElephantError]] = {
    400: InvalidInput,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: InvalidInput,
    415: InvalidInput,
    422: InvalidInput,
    429: RateLimited,
    503: Unavailable,
}


def error_class(status: int) -> type[ElephantError]:
    """The exception raised for an error response with this status."""
    found = _BY_STATUS.get(status)
    if found is not None:
        return found
    return ServerError if status >= 500 else ElephantError
