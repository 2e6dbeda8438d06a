"""The Overview page: a tenant at a glance (its landing page in the console).

Counts, growth over the chosen days, the job queue, the gate, LLM usage and cost;
every chart beside a table of the same numbers. Failed jobs carry error text, which
the REST API keeps for the admin scope (GET /jobs): only an admin key sees them here,
everyone else their count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from litestar.params import Parameter
from litestar.response import Template
from markupsafe import Markup

from app.console.charts import Series, bar_chart, line_chart
from app.console.pages.base import ConsolePages, ScreenDep, view
from app.errors import InvalidInput
from app.services.ops.overview import GrowthDay, Overview, UsageReport, overview

DAY_CHOICES = (7, 30, 90)
DEFAULT_DAYS = 30
Days = Annotated[str | None, Parameter(description="Days of growth and usage shown: 7, 30 or 90.")]


def _days(value: str | None) -> int:
    if value is None or value == "":
        return DEFAULT_DAYS
    if not value.isdigit() or int(value) not in DAY_CHOICES:
        choices = ", ".join(str(d) for d in DAY_CHOICES)
        raise InvalidInput(f"days: choose one of {choices} (got {value!r})")
    return int(value)


def growth_charts(days: list[GrowthDay]) -> dict[str, Markup]:
    labels = [day.day.isoformat() for day in days]

    def memories_and_facts(
        suffix: str, memories: Callable[[GrowthDay], int], facts: Callable[[GrowthDay], int]
    ) -> list[Series]:
        """The two series of a growth chart: a count of memories and of facts, by day."""
        return [
            Series(f"memories{suffix}", [memories(day) for day in days]),
            Series(f"facts{suffix}", [facts(day) for day in days]),
        ]

    stored = memories_and_facts("", lambda day: day.memories_total, lambda day: day.facts_total)
    added = memories_and_facts(
        " added", lambda day: day.memories_added, lambda day: day.facts_added
    )
    return {
        "stored": line_chart(
            labels, stored, title="Memories and facts stored, by day", ident="chart-stored"
        ),
        "added": bar_chart(
            labels,
            added,
            title="Memories and facts added per day",
            ident="chart-added",
            stacked=False,
        ),
    }


def usage_charts(usage: UsageReport) -> dict[str, Markup]:
    labels = [row.day.isoformat() for row in usage.by_day if row.day is not None]
    tokens: dict[tuple[str, str], int] = {}
    for row in usage.by_day_operation:
        if row.day is not None and row.operation is not None:
            tokens[(row.day.isoformat(), row.operation)] = row.tokens_in + row.tokens_out
    empty = "No LLM calls in this period"
    by_day = bar_chart(
        labels if usage.total.calls else [],
        [
            Series(operation, [tokens.get((label, operation), 0) for label in labels])
            for operation in usage.operations
        ],
        title="LLM tokens (in + out) per day, by operation",
        ident="chart-usage-day",
        unit="tokens",
        empty_message=empty,
    )
    operations = [row.operation or "" for row in usage.by_operation]
    by_operation = bar_chart(
        operations,
        [
            Series("tokens in", [row.tokens_in for row in usage.by_operation]),
            Series("tokens out", [row.tokens_out for row in usage.by_operation]),
        ],
        title="LLM tokens by operation",
        ident="chart-usage-operation",
        unit="tokens",
        stacked=False,
        empty_message=empty,
    )
    return {"by_day": by_day, "by_operation": by_operation}


class OverviewPages(ConsolePages):
    path = "/t/{tenant_id:str}/"

    @view("/")
    def index(self, screen: ScreenDep, days: Days = None) -> Template:
        chosen = _days(days)
        elephant = screen.elephant
        report: Overview = overview(
            elephant, screen.tenant, chosen, failed_jobs=screen.can("admin")
        )
        return screen.render(
            "overview/index.html",
            title="Overview",
            active="overview",
            report=report,
            day_choices=DAY_CHOICES,
            growth_charts=growth_charts(report.growth),
            usage_charts=usage_charts(report.usage),
            llm_provider=elephant.settings.llm.provider,
        )
