"""What arrives in the URL: the text rules for query and path parameters, and the
parameters every endpoint names the same way (query, cursor, limit).

Bodies are checked by their models (app.services.common.inputs); a query or path string
reaches a handler as a plain ``str``, so this hook applies the same rule to every
one of them before any handler runs: a NUL or a lone surrogate in
``?source=%00`` is a 422 naming the parameter, never a database error.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request
from litestar.params import Parameter, QueryParameter

from app.errors import InvalidInput
from app.services.common import paging
from app.services.common.inputs import text_problem


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


# ------------------------------------------------------------------ one request vocabulary

QueryText = Annotated[
    str | None,
    QueryParameter(name="query", min_length=1, max_length=2000, description="What to find."),
]
"""``query`` (declare it under another name: ``query`` is a kwarg Litestar reserves)."""
DeprecatedQ = Annotated[
    str | None,
    Parameter(min_length=1, max_length=2000, description="Deprecated: the old name of query."),
]
Cursor = Annotated[
    str | None,
    Parameter(
        min_length=1,
        max_length=paging.MAX_CURSOR_CHARS,
        description="next_cursor of the previous page (none: the first page).",
    ),
]
PageLimit = Annotated[int, Parameter(ge=1, le=paging.MAX_LIMIT, description="1-200 per page.")]


def one_query(query: str | None, q: str | None, *, required: bool = True) -> str | None:
    """``query``, or ``q``, its old name (still accepted): naming both with different text
    is a 422, and so is naming neither when the query is required."""
    if query is not None and q is not None and query != q:
        raise _field_error("query", "give query or its old name q, not both")
    text = query if query is not None else q
    if text is None and required:
        raise _field_error("query", "missing: say what to find, e.g. ?query=graz")
    return text


def _field_error(key: str, message: str) -> InvalidInput:
    return InvalidInput(f"{key}: {message}", details={"fields": [{"key": key, "message": message}]})
