"""The one place where Elephant's errors become HTTP responses."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.exceptions import ValidationException

from app.errors import ElephantError


def elephant_error_handler(_: Request[Any, Any, Any], exc: ElephantError) -> Response[object]:
    return Response(content=exc.to_dict(), status_code=exc.status_code)


def validation_error_handler(
    _: Request[Any, Any, Any], exc: ValidationException
) -> Response[object]:
    """Litestar's 400 for a malformed body becomes our 422 with its field messages."""
    return Response(
        content={"error": "invalid_input", "message": exc.detail, "details": {"fields": exc.extra}},
        status_code=422,
    )


EXCEPTION_HANDLERS = {
    ElephantError: elephant_error_handler,
    ValidationException: validation_error_handler,
}
