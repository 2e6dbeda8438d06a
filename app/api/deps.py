"""Request-scoped values shared by the controllers: the runtime and the tenant."""

from __future__ import annotations

from typing import Any

from litestar import Request

from app.config import validate_tenant_id
from app.errors import InvalidInput
from app.services.runtime import Elephant

TENANT_HEADER = "X-Elephant-Tenant"


def tenant_from(request: Request[Any, Any, Any], elephant: Elephant) -> str:
    """The tenant named by the X-Elephant-Tenant header, else the configured default."""
    value = request.headers.get(TENANT_HEADER) or elephant.settings.tenant.default
    try:
        return validate_tenant_id(value)
    except ValueError as exc:
        raise InvalidInput(f"{TENANT_HEADER}: {exc}") from None
