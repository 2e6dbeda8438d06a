"""Errors on console pages are pages: the same status and message as the API's, in HTML."""

from __future__ import annotations

import logging
from typing import Any

import pydantic
from litestar import Request, Response
from litestar.exceptions import HTTPException
from litestar.response import Template

from app.api.errors import INTERNAL_MESSAGE, error_code
from app.errors import ElephantError, InvalidInput, retry_headers
from app.web.access_log import route_template

log = logging.getLogger(__name__)


def _error_page(status: int, message: str, headers: dict[str, str] | None = None) -> Template:
    return Template(
        template_name="error.html",
        status_code=status,
        context={"status": status, "code": error_code(status), "message": message},
        headers=headers,
    )


def elephant_error(_: Request[Any, Any, Any], exc: ElephantError) -> Response[Any]:
    """The API's error as a page, with its Retry-After (a 429, a 503 while recovering)."""
    return _error_page(exc.status_code, exc.message, retry_headers(exc))


def validation_error(_: Request[Any, Any, Any], exc: pydantic.ValidationError) -> Response[Any]:
    return _error_page(422, InvalidInput.from_validation(exc).message)


def http_error(_: Request[Any, Any, Any], exc: HTTPException) -> Response[Any]:
    return _error_page(exc.status_code, str(exc.detail))


def internal_error(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    log.error("console page %s failed", route_template(request.scope), exc_info=exc)
    return _error_page(500, INTERNAL_MESSAGE)


CONSOLE_EXCEPTION_HANDLERS = {
    ElephantError: elephant_error,
    pydantic.ValidationError: validation_error,
    HTTPException: http_error,
    Exception: internal_error,
}
