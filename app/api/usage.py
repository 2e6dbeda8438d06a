"""GET /usage: the tenant's LLM calls by day and operation, with tokens and cost."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get
from litestar.params import Parameter

from app.api.routes import Runtime, Tenant, route
from app.services.ops.overview import MAX_DAYS, UsageReport, usage_report
from app.web.route_access import READ


class UsageController(Controller):
    tags = ["usage"]

    @route(
        get,
        "/usage",
        READ,
        "LLM usage by day and operation: calls, failures, tokens, latency, cost",
        description=(
            "The last `days` UTC days, today included. Cost is tokens at "
            "metrics.llm_price_in_per_mtok / llm_price_out_per_mtok; with no price set "
            "every cost_usd is null and prices.note says the cost is not configured."
        ),
    )
    def usage(
        self,
        tenant: Tenant,
        elephant: Runtime,
        days: Annotated[
            int, Parameter(ge=1, le=MAX_DAYS, description=f"UTC days back, 1-{MAX_DAYS}.")
        ] = 30,
    ) -> UsageReport:
        return usage_report(elephant, tenant, days)
