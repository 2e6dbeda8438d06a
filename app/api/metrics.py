"""GET /metrics (Prometheus text format), and the request count and latency it shows.

Who may scrape: a key with the admin scope (the route declares it, like any other), or
anyone when metrics.public is on (a scraper on a private network). The page carries no
tenant ids and no raw paths: requests are labelled by route template (``/memories/{id}``),
and a path no route matched by ``unmatched``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from litestar import Response, get
from litestar.enums import ScopeType
from litestar.handlers import HTTPRouteHandler
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from app.config import Settings
from app.services.ops import metrics
from app.services.runtime import Elephant
from app.web.access_log import mark_start, method_of, route_template, started_at
from app.web.route_access import ADMIN_UNAUDITED, PUBLIC

METRICS_PATH = "/metrics"


def metrics_route(
    settings: Settings, get_elephant: Callable[[], Elephant | None]
) -> HTTPRouteHandler:
    """The /metrics handler of one app (its registry reads this app's pool and queue)."""
    registry = metrics.app_registry(get_elephant, settings.metrics)

    @get(
        METRICS_PATH,
        opt=(PUBLIC if settings.metrics.public else ADMIN_UNAUDITED).opt,
        include_in_schema=False,
        sync_to_thread=True,
    )
    def scrape() -> Response[bytes]:
        return Response(metrics.render(registry), media_type=metrics.CONTENT_TYPE)

    return scrape


class RequestTiming(ASGIMiddleware):
    """Notes when a routed request came in; :func:`observe_response` (and the access line,
    app/web/access_log.py) measure from there."""

    scopes = (ScopeType.HTTP,)

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        mark_start(scope)
        await next_app(scope, receive, send)


async def observe_response(message: Message, scope: Scope) -> None:
    """before_send hook: every response counts, refusals and unmatched paths included
    (those never reach a middleware, so they have a count but no latency)."""
    if message["type"] != "http.response.start":
        return
    method = method_of(scope)
    route = route_template(scope)
    metrics.HTTP_REQUESTS.labels(method, route, str(message["status"])).inc()
    started = started_at(scope)
    if started is not None:
        metrics.HTTP_SECONDS.labels(method, route).observe(time.perf_counter() - started)
