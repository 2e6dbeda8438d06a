"""The web console at /ui: server-rendered pages over the services, for people.

What the agent remembers, why a hit ranked, what the gate refused, how a fact
changed, the graph around an entity, the conversations, erasure. Pages are Jinja
templates rendered on the server (app/console/templates), with a little JavaScript
served from the package (app/console/static); nothing is fetched from elsewhere
(the Content-Security-Policy says so to the browser). Each page is a thin adapter
over app/services, as the REST handlers are.

Access (app/web/access.py): sign in with an API key (app/pages/signin.py); the
browser then holds an HttpOnly, SameSite=Strict session cookie, and every form
carries a CSRF token (app/console/security.py). Keyless only in auth.mode = local,
which serves on loopback only.
"""

from __future__ import annotations

from litestar import Router
from litestar.static_files import create_static_files_router
from litestar.template import TemplateConfig
from litestar.types import ControllerRouterHandler

from app.console.errors import CONSOLE_EXCEPTION_HANDLERS
from app.console.pages import PAGES
from app.console.render import STATIC_DIR, environment
from app.console.security import RESPONSE_HEADERS, csrf_guard
from app.web.route_access import PUBLIC

CONSOLE_PATH = "/ui"


def console_router() -> ControllerRouterHandler:
    static = create_static_files_router(
        path="/static", directories=[STATIC_DIR], opt=PUBLIC.opt, include_in_schema=False
    )
    return Router(
        path=CONSOLE_PATH,
        route_handlers=[*PAGES, static],
        guards=[csrf_guard],
        exception_handlers=CONSOLE_EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        response_headers=RESPONSE_HEADERS,
        include_in_schema=False,
    )


def template_config() -> TemplateConfig:  # type: ignore[type-arg]
    from litestar.plugins.jinja import JinjaTemplateEngine

    return TemplateConfig(instance=JinjaTemplateEngine.from_environment(environment()))
