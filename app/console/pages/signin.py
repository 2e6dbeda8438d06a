"""Signing in and out of the console, and the routes that only redirect to a page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.enums import RequestEncodingType
from litestar.params import Body, Parameter
from litestar.response import Redirect, Template

from app.config import Settings, validate_tenant_id
from app.errors import ElephantError, InvalidInput, RateLimited, retry_headers
from app.services.access import audit, console_sessions
from app.services.runtime import Elephant
from app.web.cookies import COOKIE, COOKIE_PATH, read_session_token, session_cookie
from app.web.failed_auth import FailedAuthGuard
from app.web.route_access import CONSOLE_PUBLIC, CONSOLE_READ

SIGN_IN = "/ui/login"


@dataclass
class SignInForm:
    key: str = ""
    next: str = ""


def safe_next(target: str | None) -> str:
    """Where to go after signing in: a console path only (never another site)."""
    if target and target.startswith("/ui/") and "\\" not in target and "//" not in target:
        return target
    return "/ui/"


def _sign_in_page(
    message: str | None, target: str, status: int = 200, headers: dict[str, str] | None = None
) -> Template:
    return Template(
        template_name="login.html",
        status_code=status,
        context={"message": message, "next": target},
        headers=headers,
    )


def _client(request: Request[Any, Any, Any]) -> str:
    return request.client.host if request.client else "?"


class SignInPages(Controller):
    include_in_schema = False

    @get("/login", opt=CONSOLE_PUBLIC.opt, sync_to_thread=False)
    def form(
        self,
        request: Request[Any, Any, Any],
        next: Annotated[str | None, Parameter(description="Page to return to.")] = None,
    ) -> Response[Any]:
        settings: Settings = request.app.state["settings"]
        if settings.auth.mode == "local":
            return Redirect(safe_next(next), status_code=303)
        return _sign_in_page(None, safe_next(next))

    @post("/login", opt=CONSOLE_PUBLIC.opt, sync_to_thread=True)
    def sign_in(
        self,
        request: Request[Any, Any, Any],
        elephant: NamedDependency[Elephant],
        data: Annotated[SignInForm, Body(media_type=RequestEncodingType.URL_ENCODED)],
    ) -> Response[Any]:
        settings = elephant.settings
        target = safe_next(data.next)
        client, key = _client(request), data.key.strip()
        # The process's failed-auth budget, shared with REST and MCP (app/web/failed_auth.py):
        # a guesser behind the same address never holds back the right key's sign-in.
        guard: FailedAuthGuard = request.app.state["failed_auth"]
        try:
            session = guard.guarded(
                client,
                key,
                lambda: console_sessions.sign_in(
                    elephant.db, key, client, settings.console.session_hours
                ),
            )
        except RateLimited as exc:  # the form again, with when to retry
            return _sign_in_page(exc.message, target, exc.status_code, retry_headers(exc))
        except ElephantError as exc:
            audit.record(
                elephant.db,
                tenant=None,
                key_prefix=None,
                action="POST /ui/login",
                outcome="denied",
                client=client,
                detail={"status": exc.status_code, "reason": exc.code},
            )
            return _sign_in_page(exc.message, target, exc.status_code)
        audit.record(
            elephant.db,
            tenant=session.principal.tenant,
            key_prefix=session.principal.prefix,
            action="console.sign_in",
            outcome="ok",
            client=client,
        )
        secure = settings.console.secure_cookie == "always" or (
            settings.console.secure_cookie == "auto" and request.url.scheme == "https"
        )
        return Redirect(
            target,
            status_code=303,
            cookies=[
                session_cookie(
                    session.token,
                    secure=secure,
                    max_age=round(settings.console.session_hours * 3600),
                )
            ],
        )

    @post("/logout", opt=CONSOLE_READ.opt, sync_to_thread=True)
    def sign_out(
        self, request: Request[Any, Any, Any], elephant: NamedDependency[Elephant]
    ) -> Response[Any]:
        console_sessions.sign_out(elephant.db, read_session_token(request.headers))
        response = Redirect(SIGN_IN, status_code=303)
        response.delete_cookie(COOKIE, path=COOKIE_PATH)
        return response

    @get(["/", "/t"], opt=CONSOLE_READ.opt, sync_to_thread=False)
    def home(self, tenant: NamedDependency[str]) -> Redirect:
        return Redirect(f"/ui/t/{tenant}/", status_code=303)

    @get("/switch", opt=CONSOLE_READ.opt, sync_to_thread=False)
    def switch(
        self,
        tenant: NamedDependency[str],
        to: Annotated[str, Parameter(description="The tenant to show.")] = "",
    ) -> Redirect:
        """The tenant chooser of an all-tenant key (the page itself checks the key may)."""
        try:
            chosen = validate_tenant_id(to.strip())
        except ValueError as exc:
            raise InvalidInput(f"tenant: {exc}") from None
        return Redirect(f"/ui/t/{chosen}/", status_code=303)
