"""GET /health."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Response, get
from litestar.di import NamedDependency

from app.api.access import PUBLIC
from app.db import Database
from app.services.health import health


class HealthController(Controller):
    path = "/health"
    tags = ["operations"]

    @get(
        sync_to_thread=True, opt=PUBLIC, summary="Database reachability, versions, schema and model"
    )
    def health(self, db: NamedDependency[Database]) -> Response[dict[str, Any]]:
        report = health(db)
        status = 503 if report["status"] == "unavailable" else 200
        return Response(report, status_code=status)
