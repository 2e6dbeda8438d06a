"""The one place where Elephant's errors become MCP errors.

- A tool's own failure (an ElephantError, or a pydantic error from building a
  service request) becomes a ToolError whose text is ``<code>: <message>``, so
  the agent reads what to fix; a resource's becomes a ResourceError.
- Arguments that fail the tool's schema become ``invalid_input: <field>: <problem>``.
- Anything else is masked by the server (``mask_error_details``) and logged.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from fastmcp.exceptions import ResourceError, ToolError
from fastmcp.exceptions import ValidationError as ArgumentError
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult
from mcp.types import CallToolRequestParams
from pydantic import ValidationError

from app.errors import ElephantError, InvalidInput

F = TypeVar("F", bound=Callable[..., Any])


def message_for(exc: ElephantError | ValidationError) -> str:
    """``<code>: <message>``, the text the agent reads."""
    if isinstance(exc, ValidationError):
        exc = InvalidInput.from_validation(exc)
    return f"{exc.code}: {exc.message}"


def _log_level(exc: ElephantError | ValidationError) -> int:
    """A caller's mistake is INFO; our own trouble (database, LLM, config) is ERROR."""
    if isinstance(exc, ElephantError) and exc.status_code >= 500:
        return logging.ERROR
    return logging.INFO


def translate(fn: F, error: type[ToolError | ResourceError] = ToolError) -> F:
    """Wrap a tool or resource function so our errors reach the client with their message."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (ElephantError, ValidationError) as exc:
            raise error(message_for(exc), log_level=_log_level(exc)) from exc

    return wrapper  # type: ignore[return-value]


class ArgumentErrors(Middleware):
    """Arguments rejected by a tool's schema: name each field and what is wrong with it."""

    async def on_call_tool(
        self,
        context: MiddlewareContext[CallToolRequestParams],
        call_next: CallNext[CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        try:
            return await call_next(context)
        except ArgumentError as exc:
            cause = exc.__cause__
            refusal = cause if isinstance(cause, ValidationError) else InvalidInput(str(exc))
            raise ToolError(message_for(refusal), log_level=logging.INFO) from exc
