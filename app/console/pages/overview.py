"""The Overview page (not built yet)."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, get
from litestar.response import Template

from app.api.access import CONSOLE_READ
from app.console.render import page


class OverviewPages(Controller):
    path = "/t/{tenant_id:str}/"
    include_in_schema = False

    @get("/", opt=CONSOLE_READ, sync_to_thread=False)
    def index(self, request: Request[Any, Any, Any]) -> Template:
        return page(request, "placeholder.html", title="Overview", active="overview")
