"""Session lifecycle endpoints: close a session, fetch a project's latest handoff."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get, post
from litestar.params import JSONBody, Parameter

from app.api.routes import Runtime, Tenant, route
from app.services.memory.sessions import (
    Handoff,
    SessionClosed,
    SessionCloseIn,
    close_session,
    get_handoff,
)
from app.web.route_access import READ, WRITE


class SessionsController(Controller):
    tags = ["sessions"]

    @route(
        post,
        "/sessions/close",
        WRITE,
        "Store a session's transcript, extract facts, write its handoff",
        status_code=201,
    )
    def close(
        self,
        tenant: Tenant,
        elephant: Runtime,
        data: JSONBody[SessionCloseIn],
        wait: Annotated[
            bool, Parameter(description="Run fact extraction now (default) or leave it queued.")
        ] = True,
    ) -> SessionClosed:
        return close_session(elephant, tenant, data, wait=wait)

    @route(get, "/handoff", READ, "The latest handoff of a project")
    def handoff(
        self,
        tenant: Tenant,
        elephant: Runtime,
        project: Annotated[str, Parameter(min_length=1, max_length=200, description="Project.")],
    ) -> Handoff:
        return get_handoff(elephant, tenant, project)
