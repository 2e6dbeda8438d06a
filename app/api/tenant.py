"""Tenant settings endpoints: the owner, who "I" in the tenant's notes is."""

from __future__ import annotations

from litestar import Controller, get, put
from litestar.params import JSONBody

from app.api.routes import Runtime, Tenant, route
from app.services.access import tenants
from app.services.access.tenants import Owner, OwnerIn
from app.web.route_access import ADMIN, READ


class TenantController(Controller):
    tags = ["tenant"]

    @route(get, "/tenant/owner", READ, "This tenant's note owner")
    def get_owner(self, tenant: Tenant, elephant: Runtime) -> Owner:
        return tenants.get_owner(elephant, tenant)

    @route(put, "/tenant/owner", ADMIN, "Set this tenant's note owner")
    def set_owner(self, tenant: Tenant, elephant: Runtime, data: JSONBody[OwnerIn]) -> Owner:
        return tenants.set_owner(elephant, tenant, data.owner)
