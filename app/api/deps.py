"""Request-scoped dependencies the controllers declare by name: the access decision, the
principal behind the request and the tenant it acts for (all settled by AccessMiddleware)."""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.di import Provide

from app.errors import Forbidden
from app.services.access.auth import Principal
from app.web.access import Access


def provide_access(request: Request[Any, Any, Any]) -> Access:
    access = request.scope.get("auth")
    if not isinstance(access, Access):  # a route outside the access middleware: refuse
        raise Forbidden("this request was not authorised")
    return access


def provide_tenant(request: Request[Any, Any, Any]) -> str:
    """The key's own tenant, or the one an all-tenant key named in X-Elephant-Tenant
    (default: tenant.default)."""
    return provide_access(request).tenant


def provide_principal(request: Request[Any, Any, Any]) -> Principal:
    return provide_access(request).principal


REQUEST_DEPENDENCIES = {
    "access": Provide(provide_access, sync_to_thread=False),
    "tenant": Provide(provide_tenant, sync_to_thread=False),
    "principal": Provide(provide_principal, sync_to_thread=False),
}
