"""GET /health."""

from __future__ import annotations

from litestar import Controller, Response, get
from litestar.di import NamedDependency
from litestar.openapi import ResponseSpec

from app.db import Database
from app.services.ops.health import HealthReport, health
from app.web.route_access import PUBLIC


class HealthController(Controller):
    path = "/health"
    tags = ["operations"]

    @get(
        sync_to_thread=True,
        opt=PUBLIC.opt,
        summary="Database reachability, versions, schema and model",
        responses={503: ResponseSpec(HealthReport, description="The database is unreachable")},
    )
    def health(self, db: NamedDependency[Database]) -> Response[HealthReport]:
        report = health(db)
        status = 503 if report.status == "unavailable" else 200
        return Response(report, status_code=status)
