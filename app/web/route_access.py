"""What a route handler declares about who may call it: one typed value per route.

Every route declares a :class:`RouteAccess` in its ``opt`` under one key
(``opt=READ.opt``); :func:`route_access` is the one place it is read (by the access
middleware, app/web/access.py, and the start-up check below). A handler without one is
refused when the app is built (:func:`check_route_access`), so nothing is open by
omission.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from litestar.handlers.base import BaseRouteHandler

RouteScope = Literal["public", "read", "write", "admin", "mcp"]
ROUTE_SCOPES: frozenset[str] = frozenset(get_args(RouteScope))
OPT_KEY = "access"  # the key of a handler's ``opt`` that holds its RouteAccess


@dataclass(frozen=True)
class RouteAccess:
    """Who may call a route, and how the caller is found.

    ``scope``: ``public`` (health, the OpenAPI page, the console's sign-in form and
    static files), ``read``, ``write``, ``admin``, or ``mcp`` (the MCP mount, whose keys
    fastmcp checks with the same key store). ``console``: a web console page, whose
    caller is the session cookie's key (not a bearer key), whose tenant is the path
    parameter ``tenant_id`` (not the tenant header), and whose forms may post url-encoded
    bodies. ``audit``: whether an admin route's successes go to the audit log (denials
    always do)."""

    scope: RouteScope
    console: bool = False
    audit: bool = True

    def __post_init__(self) -> None:
        if self.scope not in ROUTE_SCOPES:
            raise ValueError(f"unknown route scope {self.scope!r}")

    @property
    def opt(self) -> dict[str, RouteAccess]:
        """The ``opt`` of a route handler that declares this access."""
        return {OPT_KEY: self}

    @property
    def checks_caller(self) -> bool:
        """False for public routes and the MCP mount (fastmcp checks its own keys)."""
        return self.scope not in ("public", "mcp")

    @property
    def audits_success(self) -> bool:
        """Admin requests are written to the audit log, unless the route opts out."""
        return self.scope == "admin" and self.audit


PUBLIC = RouteAccess("public")
READ = RouteAccess("read")
WRITE = RouteAccess("write")
ADMIN = RouteAccess("admin")
# An admin read that changes nothing and is polled (a Prometheus scrape): denials are still
# audited, successes are not (one audit row per scrape would flood the log).
ADMIN_UNAUDITED = RouteAccess("admin", audit=False)
MCP = RouteAccess("mcp")
# Web console pages (app/console).
CONSOLE_PUBLIC = RouteAccess("public", console=True)
CONSOLE_READ = RouteAccess("read", console=True)
CONSOLE_WRITE = RouteAccess("write", console=True)
CONSOLE_ADMIN = RouteAccess("admin", console=True)


def declared(opt: Mapping[str, Any]) -> RouteAccess | None:
    """The RouteAccess in a handler's ``opt``, or None if it declares none."""
    access = opt.get(OPT_KEY)
    return access if isinstance(access, RouteAccess) else None


def route_access(handler: BaseRouteHandler) -> RouteAccess | None:
    """What ``handler`` declared about its callers, or None if it declares nothing."""
    return declared(handler.opt)


def check_route_access(handlers: Iterable[tuple[str, Mapping[str, Any]]]) -> None:
    """Fail at start-up if a route (path, handler opt) forgot to say who may call it."""
    missing = [path for path, opt in handlers if declared(opt) is None]
    if missing:
        raise RuntimeError(f"routes without an access scope: {', '.join(sorted(missing))}")
