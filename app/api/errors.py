"""The one place where Elephant's errors become HTTP responses.

Every error answers ``{"error": code, "message": text, "details"?}``: Elephant's
own errors, pydantic's (a service request built inside a handler), Litestar's
(404 unknown path, 405, 400 malformed JSON, 413, 415...), and anything unexpected,
which is a 500 ``internal_error`` that says nothing of the internals and is logged
with its traceback. Error responses written outside Litestar's exception handling
(the OpenAPI pages, the MCP mount) are reshaped by app/api/error_shape.py.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

import pydantic
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException

from app.api.request_id import request_id
from app.errors import (
    Conflict,
    ElephantError,
    Forbidden,
    InvalidInput,
    MisdirectedHost,
    NotFound,
    PayloadTooLarge,
    Problem,
    RateLimited,
    Unauthorized,
    UnsupportedMediaType,
    describe_problems,
    retry_headers,
)
from app.web.access_log import route_template

log = logging.getLogger(__name__)

# Litestar's own errors use the codes of ours with the same status.
_CODES = {
    error.status_code: error.code
    for error in (
        Conflict,
        Forbidden,
        InvalidInput,
        MisdirectedHost,
        NotFound,
        PayloadTooLarge,
        RateLimited,
        Unauthorized,
        UnsupportedMediaType,
    )
}
INTERNAL_MESSAGE = "an unexpected error occurred on the server; it has been logged"


def elephant_error_handler(_: Request[Any, Any, Any], exc: ElephantError) -> Response[Any]:
    headers = retry_headers(exc)
    if isinstance(exc, Unauthorized):
        headers["WWW-Authenticate"] = 'Bearer realm="elephant"'
    return Response(content=exc.to_dict(), status_code=exc.status_code, headers=headers)


def validation_error_handler(
    request: Request[Any, Any, Any], exc: ValidationException
) -> Response[Any]:
    """Litestar's 400 for a malformed request becomes a 422 naming each field to fix
    (``details.fields``: Litestar's own list, each {key?, message, source?})."""
    fields = exc.extra if isinstance(exc.extra, list) else []
    return elephant_error_handler(request, invalid_fields(fields, str(exc.detail)))


def invalid_fields(fields: list[Any], fallback: str) -> InvalidInput:
    """The 422 of a request some of whose fields were refused: its message names each
    (``key: problem; ...``), ``details.fields`` lists them as given ({key?, message,
    source?}); ``fallback`` is the message when none is named."""
    problems = [
        Problem(
            str(item.get("key") or item.get("source") or "body"),
            str(item.get("message", "invalid")).removeprefix("Value error, "),
        )
        for item in fields
        if isinstance(item, dict)
    ]
    return InvalidInput(describe_problems(problems) or fallback, details={"fields": fields})


def pydantic_error_handler(
    request: Request[Any, Any, Any], exc: pydantic.ValidationError
) -> Response[Any]:
    """A service request built inside a handler (GET /search from query parameters) that
    fails its model is the caller's mistake too: 422 naming each field."""
    return elephant_error_handler(request, InvalidInput.from_validation(exc))


def http_error_handler(request: Request[Any, Any, Any], exc: HTTPException) -> Response[Any]:
    """Litestar's own 4xx (unknown path, method, malformed JSON, size, media type) in our
    shape, keeping the status and headers (Allow on a 405)."""
    if exc.status_code >= 500:
        return internal_error_handler(request, exc)
    message = str(exc.detail)
    if exc.status_code == 404 and message == "Not Found":  # the router: no such path
        message = f"nothing at {request.url.path}: the endpoints are listed at /schema"
    elif exc.status_code == 405 and exc.headers and exc.headers.get("allow"):
        message = f"{request.method} is not allowed here; allowed: {exc.headers['allow']}"
    return Response(
        content={"error": error_code(exc.status_code), "message": message},
        status_code=exc.status_code,
        headers=exc.headers,
    )


def error_code(status: int) -> str:
    """The ``error`` of a status no ElephantError named: ours when one has that status,
    else the HTTP phrase in snake case (``method_not_allowed``)."""
    return _CODES.get(status) or _snake(status)


def internal_error_handler(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """A bug or an outage nobody turned into an ElephantError: logged with its traceback,
    answered without internals (they could leak data or schema)."""
    rid = request_id(request.scope)
    log.exception(
        "unexpected %s on %s %s (request %s)", type(exc).__name__, request.method,
        route_template(request.scope), rid, exc_info=exc,
    )  # fmt: skip
    return Response(
        content={
            "error": "internal_error",
            "message": f"{INTERNAL_MESSAGE} (request id {rid}: the server log has the details)",
            "details": {"request_id": rid},
        },
        status_code=500,
    )


def _snake(status: int) -> str:
    try:
        return HTTPStatus(status).phrase.lower().replace(" ", "_").replace("-", "_")
    except ValueError:
        return "http_error"


EXCEPTION_HANDLERS = {
    ElephantError: elephant_error_handler,
    ValidationException: validation_error_handler,
    pydantic.ValidationError: pydantic_error_handler,
    HTTPException: http_error_handler,
    Exception: internal_error_handler,
}
