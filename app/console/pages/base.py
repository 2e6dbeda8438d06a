"""What every tenant page of the console starts from: ``ConsolePages``, the controller a
page module extends, ``Screen``, the one dependency its handlers take (``ScreenDep``), and
``view``, how a page anyone with the read scope may see is declared.

A handler needs the request (to draw the shared frame: navigation, CSRF field,
sign-out), the tenant the page shows and the runtime; ``screen`` brings the three, and
``screen.render`` draws a template in the frame (app.console.render.page), so a page
module says only what is its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from litestar import Controller, Request, get
from litestar.di import NamedDependency, Provide
from litestar.handlers import HTTPRouteHandler
from litestar.response import Template

from app.console.render import access_of, page
from app.services.runtime import Elephant
from app.web.route_access import CONSOLE_READ


@dataclass(frozen=True, slots=True)
class Screen:
    """The request a console page answers, the tenant it shows and the runtime."""

    request: Request[Any, Any, Any]
    tenant: str
    elephant: Elephant

    @property
    def base(self) -> str:
        """``/ui/t/<tenant>``: the prefix of every link of the page."""
        return f"/ui/t/{self.tenant}"

    @property
    def actor(self) -> str | None:
        """The key prefix an action taken from the page is recorded under (None: keyless)."""
        return access_of(self.request).principal.prefix

    def can(self, scope: str) -> bool:
        """Whether the signed-in key holds ``scope``."""
        return access_of(self.request).principal.has(scope)

    def render(
        self, template: str, *, title: str, active: str, status_code: int = 200, **context: Any
    ) -> Template:
        """``template`` in the console's frame (see app.console.render.page)."""
        return page(
            self.request, template, title=title, active=active, status_code=status_code, **context
        )


def provide_screen(
    request: Request[Any, Any, Any],
    tenant: NamedDependency[str],
    elephant: NamedDependency[Elephant],
) -> Screen:
    return Screen(request, tenant, elephant)


ScreenDep: TypeAlias = NamedDependency[Screen]
"""What a page handler names to get its screen: ``screen: ScreenDep``."""


def view(path: str) -> HTTPRouteHandler:
    """A page anyone with the read scope may see: GET ``path``, drawn in a worker thread."""
    return get(path, opt=CONSOLE_READ.opt, sync_to_thread=True)


class ConsolePages(Controller):
    """A console page module: its handlers sit under ``/ui/t/<tenant_id>/...``, stay out
    of the API's schema and take ``screen: ScreenDep``."""

    include_in_schema = False
    dependencies = {"screen": Provide(provide_screen, sync_to_thread=False)}
