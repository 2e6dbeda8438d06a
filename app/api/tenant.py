"""Tenant settings endpoints: the owner, who "I" in the tenant's notes is."""

from __future__ import annotations

from litestar import Controller, get, put
from litestar.di import NamedDependency
from litestar.params import JSONBody

from app.services.access import tenants
from app.services.access.tenants import Owner, OwnerIn
from app.services.runtime import Elephant
from app.web.route_access import ADMIN, READ


class TenantController(Controller):
    tags = ["tenant"]

    @get("/tenant/owner", sync_to_thread=True, opt=READ.opt, summary="This tenant's note owner")
    def get_owner(self, tenant: NamedDependency[str], elephant: NamedDependency[Elephant]) -> Owner:
        return tenants.get_owner(elephant, tenant)

    @put(
        "/tenant/owner",
        sync_to_thread=True,
        opt=ADMIN.opt,
        summary="Set this tenant's note owner",
    )
    def set_owner(
        self,
        tenant: NamedDependency[str],
        elephant: NamedDependency[Elephant],
        data: JSONBody[OwnerIn],
    ) -> Owner:
        return tenants.set_owner(elephant, tenant, data.owner)
