"""Session lifecycle endpoints: close a session, fetch a project's latest handoff."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import JSONBody, Parameter

from app.services.memory.sessions import (
    Handoff,
    SessionClosed,
    SessionCloseIn,
    close_session,
    get_handoff,
)
from app.services.runtime import Elephant
from app.web.route_access import READ, WRITE


class SessionsController(Controller):
    tags = ["sessions"]

    @post(
        "/sessions/close",
        sync_to_thread=True,
        opt=WRITE.opt,
        status_code=201,
        summary="Store a session's transcript, extract facts, write its handoff",
    )
    def close(
        self,
        tenant: NamedDependency[str],
        elephant: NamedDependency[Elephant],
        data: JSONBody[SessionCloseIn],
        wait: Annotated[
            bool, Parameter(description="Run fact extraction now (default) or leave it queued.")
        ] = True,
    ) -> SessionClosed:
        return close_session(elephant, tenant, data, wait=wait)

    @get("/handoff", sync_to_thread=True, opt=READ.opt, summary="The latest handoff of a project")
    def handoff(
        self,
        tenant: NamedDependency[str],
        elephant: NamedDependency[Elephant],
        project: Annotated[str, Parameter(min_length=1, max_length=200, description="Project.")],
    ) -> Handoff:
        return get_handoff(elephant, tenant, project)
