"""Admin endpoints for API keys and the audit log (admin scope).

An all-tenant admin key acts on the tenant it names (X-Elephant-Tenant, else
tenant.default), as on every other route: it lists that tenant's keys and audit entries
and revokes only that tenant's keys, unless it asks for every tenant with
``all_tenants=true`` (which a tenant's admin key may not). Each answer says which tenant
it was for: ``tenant`` of the list, of the audit page, of the revoked key.
"""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import JSONBody, Parameter, PathParameter

from app.api.params import Cursor, PageLimit
from app.api.routes import Runtime, route
from app.errors import NotFound
from app.protocol import TENANT_HEADER
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
        tenant = access.reach(all_tenants, "list every tenant's keys")
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
        all_tenants: Annotated[
            bool,
            Parameter(
                description="A key of any tenant, or an all-tenant key (all-tenant admin keys "
                "only); without it, only a key of the tenant the request acts for."
            ),
        ] = False,
    ) -> KeyInfo:
        tenant = access.reach(all_tenants, "revoke another tenant's key or an all-tenant key")
        try:
            return keys.revoke_key(
                elephant.db,
                prefix,
                tenant=tenant,
                revoked_by=access.principal.prefix or access.principal.name,
            )
        except NotFound as exc:
            if access.principal.tenant is not None or tenant is None:
                raise
            raise NotFound(
                f"{exc.message}: an all-tenant key acts for the tenant it names "
                f"({TENANT_HEADER}, else the default); add all_tenants=true to revoke a key "
                "of another tenant or an all-tenant key"
            ) from None

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
        tenant = access.reach(all_tenants, "read every tenant's audit entries")
        return audit.page(elephant.db, tenant=tenant, limit=limit, offset=offset, cursor=cursor)
