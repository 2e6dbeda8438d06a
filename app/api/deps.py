"""Request-scoped values shared by the controllers: the tenant the request acts for."""

from __future__ import annotations

from typing import Any

from litestar import Request

from app.api.access import Access
from app.errors import Forbidden
from app.services.auth import Principal
from app.services.runtime import Elephant


def access_of(request: Request[Any, Any, Any]) -> Access:
    access = request.scope.get("auth")
    if not isinstance(access, Access):  # a route outside the access middleware: refuse
        raise Forbidden("this request was not authorised")
    return access


def tenant_from(request: Request[Any, Any, Any], elephant: Elephant) -> str:
    """The tenant the access check settled: the key's own, or the one an all-tenant key named
    in X-Elephant-Tenant (default: tenant.default)."""
    return access_of(request).tenant


def principal_of(request: Request[Any, Any, Any]) -> Principal:
    return access_of(request).principal
