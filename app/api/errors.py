"""The one place where Elephant's errors become HTTP responses."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.exceptions import ValidationException

from app.errors import ElephantError, Unauthorized


def elephant_error_handler(_: Request[Any, Any, Any], exc: ElephantError) -> Response[Any]:
    headers: dict[str, str] = {}
    if isinstance(exc, Unauthorized):
        headers["WWW-Authenticate"] = 'Bearer realm="elephant"'
    retry_after = getattr(exc, "retry_after_s", None)  # rate limits, a database recovering
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    return Response(content=exc.to_dict(), status_code=exc.status_code, headers=headers)


def validation_error_handler(_: Request[Any, Any, Any], exc: ValidationException) -> Response[Any]:
    """Litestar's 400 for a malformed request becomes a 422 naming each field to fix."""
    fields = exc.extra if isinstance(exc.extra, list) else []
    problems = []
    for item in fields:
        if isinstance(item, dict):
            where = item.get("key") or item.get("source") or "body"
            problems.append(f"{where}: {item.get('message', 'invalid')}")
    message = "; ".join(problems) or str(exc.detail)
    return Response(
        content={"error": "invalid_input", "message": message, "details": {"fields": fields}},
        status_code=422,
    )


EXCEPTION_HANDLERS = {
    ElephantError: elephant_error_handler,
    ValidationException: validation_error_handler,
}
