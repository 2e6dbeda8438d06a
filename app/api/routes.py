"""How a JSON endpoint is declared, and the dependencies its handler names.

``@route(post, "/graph/record", WRITE, "summary")``: one line names the method, the path,
who may call it (app/web/route_access.py) and its summary in the OpenAPI document; what
every endpoint shares is said here once: its handler runs in a worker thread (the
services are synchronous). Other options (``status_code``, ``responses``) pass through.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler

from app.services.runtime import Elephant
from app.web.route_access import RouteAccess

Tenant: TypeAlias = NamedDependency[str]
"""The tenant the request acts for (provided by app/api/deps.py)."""
Runtime: TypeAlias = NamedDependency[Elephant]
"""The runtime that serves the request (provided by app/api/app.py)."""


def route(
    verb: type[HTTPRouteHandler], path: str, access: RouteAccess, summary: str, **options: Any
) -> HTTPRouteHandler:
    """The handler decorator ``verb`` (litestar's get, post, put, delete) for ``path``."""
    return verb(path, sync_to_thread=True, opt=access.opt, summary=summary, **options)
