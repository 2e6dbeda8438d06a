"""Rendering a console page: the template environment and the context every page shares."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from litestar import Request
from litestar.response import Template
from markupsafe import Markup

from app.config import Settings
from app.console.security import CSRF_FIELD
from app.errors import Forbidden
from app.web.access import Access

HERE = Path(__file__).parent
TEMPLATES_DIR = HERE / "templates"
STATIC_DIR = HERE / "static"


@dataclass(frozen=True)
class NavItem:
    key: str
    label: str
    path: str  # under /ui/t/<tenant>/
    scope: str  # shown to keys holding it


NAV = (
    NavItem("overview", "Overview", "", "read"),
    NavItem("search", "Search", "search", "read"),
    NavItem("memories", "Memories", "memories", "read"),
    NavItem("facts", "Facts", "facts", "read"),
    NavItem("gate", "Gate", "gate", "read"),
    NavItem("graph", "Graph", "graph", "read"),
    NavItem("conversations", "Conversations", "conversations", "read"),
    NavItem("erase", "Erase", "erase", "admin"),
)


def when(value: datetime | None) -> str:
    """A timestamp as people read it, in UTC (the console's one zone)."""
    if value is None:
        return "—"
    return value.strftime("%Y-%m-%d %H:%M UTC") if value.tzinfo else value.isoformat()


def query_string(**params: Any) -> str:
    """``?a=1&b=x`` from the parameters that have a value (paging and filter links)."""
    kept = {k: v for k, v in params.items() if v not in (None, "", False)}
    return "?" + urlencode(kept, doseq=True) if kept else ""


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES_DIR),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,  # a misspelt name fails the page (and its test)
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = when
    env.globals["qs"] = query_string
    return env


def access_of(request: Request[Any, Any, Any]) -> Access:
    access = request.scope.get("auth")
    if not isinstance(access, Access):
        raise Forbidden("this request was not authorised")
    return access


def page(
    request: Request[Any, Any, Any],
    template: str,
    *,
    title: str,
    active: str,
    status_code: int = 200,
    **context: Any,
) -> Template:
    """A page with the shared frame: navigation for the key's scopes, tenant, sign-out.

    Templates extend ``base.html`` and get ``base`` (``/ui/t/<tenant>``, prefix of every
    link), ``tenant``, ``principal``, ``csrf_field`` (put it in every POST form; Litestar
    reserves the name csrf_input) and ``can(scope)``."""
    access = access_of(request)
    settings: Settings = request.app.state["settings"]
    csrf = str(request.scope.get("console_csrf", ""))
    principal = access.principal
    return Template(
        template_name=template,
        status_code=status_code,
        context={
            "title": title,
            "active": active,
            "tenant": access.tenant,
            "principal": principal,
            "base": f"/ui/t/{access.tenant}",
            "nav": [item for item in NAV if principal.has(item.scope)],
            "can": principal.has,
            "csrf_value": csrf,
            "csrf_field": Markup('<input type="hidden" name="{}" value="{}">').format(
                CSRF_FIELD, csrf
            ),
            "local_mode": settings.auth.mode == "local",
            "all_tenants": principal.tenant is None,
            **context,
        },
    )
