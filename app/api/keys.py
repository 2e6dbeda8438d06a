"""Admin endpoints for API keys and the audit log (admin scope)."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import JSONBody, Parameter, PathParameter

from app.api.params import Cursor, PageLimit
from app.api.routes import Runtime, route
from app.errors import Forbidden
from app.services.access import audit, keys
from app.services.access.audit import AuditLog
from app.services.access.keys import CreatedKey, KeyIn, KeyInfo, KeyList
from app.web.access import Access
from app.web.route_access import ADMIN

AuditLimit = Annotated[
    int, Parameter(ge=1, le=audit.MAX_LIMIT, description=f"1-{audit.MAX_LIMIT} per page.")
]
MAX_OFFSET = 1_000_000  # beyond bigint an OFFSET is a database error, beyond this a mistake


class KeysController(Controller):
    tags = ["access"]

    @route(post, "/keys", ADMIN, "Create an API key (shown once)")
    def create_key(
        self, access: NamedDependency[Access], elephant: Runtime, data: JSONBody[KeyIn]
    ) -> CreatedKey:
        principal = access.principal
        keys.check_grant(principal, data)
        return keys.create_key(elephant.db, data, created_by=principal.prefix or principal.name)

    @route(get, "/keys", ADMIN, "API keys of this tenant, paged")
    def list_keys(
        self,
        access: NamedDependency[Access],
        elephant: Runtime,
        include_revoked: Annotated[bool, Parameter(description="Revoked keys too.")] = False,
        all_tenants: Annotated[
            bool, Parameter(description="Every tenant's keys (all-tenant admin keys only).")
        ] = False,
        limit: PageLimit = 200,
        cursor: Cursor = None,
    ) -> KeyList:
        tenant = _scope_of_listing(access, all_tenants)
        return keys.key_page(
            elephant.db,
            tenant=tenant,
            include_revoked=include_revoked,
            limit=limit,
            cursor=cursor,
        )

    @route(post, "/keys/{prefix:str}/revoke", ADMIN, "Revoke an API key", status_code=200)
    def revoke_key(
        self,
        access: NamedDependency[Access],
        elephant: Runtime,
        prefix: Annotated[str, PathParameter(description="The key's prefix (or the key).")],
    ) -> KeyInfo:
        only = access.principal.tenant  # a tenant's admin revokes only that tenant's keys
        return keys.revoke_key(
            elephant.db,
            prefix,
            tenant=only,
            revoked_by=access.principal.prefix or access.principal.name,
        )

    @route(get, "/audit", ADMIN, "Audit log, newest first, paged")
    def audit_log(
        self,
        access: NamedDependency[Access],
        elephant: Runtime,
        limit: AuditLimit = 50,
        offset: Annotated[
            int, Parameter(ge=0, le=MAX_OFFSET, description="Entries to skip (prefer cursor).")
        ] = 0,
        cursor: Cursor = None,
        all_tenants: Annotated[
            bool, Parameter(description="Every tenant's entries (all-tenant admin keys only).")
        ] = False,
    ) -> AuditLog:
        tenant = _scope_of_listing(access, all_tenants)
        return audit.page(elephant.db, tenant=tenant, limit=limit, offset=offset, cursor=cursor)


def _scope_of_listing(access: Access, all_tenants: bool) -> str | None:
    if not all_tenants:
        return access.tenant
    if access.principal.tenant is not None:
        raise Forbidden("only an all-tenant admin key may list every tenant")
    return None
