"""The client's address behind a reverse proxy, read only from the proxies you trust.

The failed-auth budgets (app/web/failed_auth.py), the audit log and the console's
sign-in count by client address. Behind a proxy every request comes from the proxy's
address, so the proxy must say who called (``X-Forwarded-For``), and only a proxy
may: any client can send the header. ``auth.trusted_proxies`` names those proxies
(addresses or CIDR networks; loopback by default, as uvicorn's own default). From a
peer in that list, the right-most address of X-Forwarded-For that is not itself a
trusted proxy becomes ``scope["client"]`` (each proxy appends the address it saw, so
what lies left of it is the client's word), and X-Forwarded-Proto the scheme (the
console's Secure cookie); from any other peer both headers are ignored. uvicorn's
ProxyHeadersMiddleware does exactly this; the app installs it itself, with the
configured list, and the CLI starts uvicorn without its own (``proxy_headers=False``),
so every door of every way of serving reads the same list.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from app.config import AuthSettings

App = TypeVar("App", bound=Callable[..., Any])  # an ASGI app, in Litestar's or Starlette's types


def behind_proxies(auth: AuthSettings) -> Callable[[App], App]:
    """A middleware factory (Litestar's ``middleware=[...]``, or call it on any ASGI app)
    that takes the client's address from the trusted proxies' X-Forwarded-For."""
    trusted = list(auth.trusted_proxies)

    def wrap(app: App) -> App:
        return cast("App", ProxyHeadersMiddleware(app, trusted))

    return wrap
