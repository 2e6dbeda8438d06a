"""Admin endpoints for SQL analyst roles (admin scope): create (password shown once),
list, revoke."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import JSONBody, Parameter, PathParameter

from app.api.routes import Runtime, route
from app.services.access import analysts
from app.services.access.analysts import AnalystIn, AnalystInfo, AnalystList, CreatedAnalyst
from app.web.access import Access
from app.web.route_access import ADMIN


class AnalystsController(Controller):
    tags = ["access"]

    @route(post, "/analysts", ADMIN, "Create a read-only SQL analyst role (password shown once)")
    def create_analyst(
        self, access: NamedDependency[Access], elephant: Runtime, data: JSONBody[AnalystIn]
    ) -> CreatedAnalyst:
        principal = access.principal
        analysts.check_reach(principal, data.tenants)
        return analysts.create(elephant.db, data, created_by=principal.prefix or principal.name)

    @route(get, "/analysts", ADMIN, "Analyst roles of this tenant")
    def list_analysts(
        self,
        access: NamedDependency[Access],
        elephant: Runtime,
        all_tenants: Annotated[
            bool, Parameter(description="Every analyst (all-tenant admin keys only).")
        ] = False,
    ) -> AnalystList:
        tenant = access.reach(all_tenants, "list every tenant's analysts")
        return AnalystList(items=analysts.list_analysts(elephant.db, tenant=tenant))

    @route(post, "/analysts/{name:str}/revoke", ADMIN, "Revoke an analyst role", status_code=200)
    def revoke_analyst(
        self,
        access: NamedDependency[Access],
        elephant: Runtime,
        name: Annotated[str, PathParameter(description="The analyst's name.")],
        all_tenants: Annotated[
            bool, Parameter(description="Any tenant's analyst (all-tenant admin keys only).")
        ] = False,
    ) -> AnalystInfo:
        tenant = access.reach(all_tenants, "revoke another tenant's analyst")
        principal = access.principal
        return analysts.revoke(
            elephant.db, name, tenant=tenant, revoked_by=principal.prefix or principal.name
        )
