"""The text rules for what arrives in the URL: query and path parameters.

Bodies are checked by their models (app.services.inputs); a query or path string
reaches a handler as a plain ``str``, so this hook applies the same rule to every
one of them before any handler runs: a NUL or a lone surrogate in
``?source=%00`` is a 422 naming the parameter, never a database error.
"""

from __future__ import annotations

from typing import Any

from litestar import Request

from app.errors import InvalidInput
from app.services.inputs import text_problem


def check_url_text(request: Request[Any, Any, Any]) -> None:
    """Litestar ``before_request`` hook: refuse unstorable text in query or path parameters."""
    for name, value in request.query_params.multi_items():
        _check(f"query parameter {name}", value)
    for name, value in request.path_params.items():
        if isinstance(value, str):
            _check(f"path parameter {name}", value)


def _check(where: str, value: str) -> None:
    problem = text_problem(value)
    if problem is not None:
        raise InvalidInput(f"{where} {problem}")
