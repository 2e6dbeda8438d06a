"""The Gate page: what the admission gate kept and refused, and why; admit a refused note.

A thin adapter over app/services/gate/decisions.py (counts, the threshold in force, the
decisions, admitting a rejected note); the admit form
posts here with the session's CSRF token and comes back (303) to the page with a notice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated
from uuid import UUID

from litestar import post
from litestar.params import Parameter, PathParameter
from litestar.response import Redirect, Template

from app.console.forms import blank
from app.console.pages.base import ConsolePages, ScreenDep, view
from app.console.render import query_string
from app.errors import InvalidInput
from app.services.gate import decisions as gate_log
from app.web.route_access import CONSOLE_WRITE

PAGE_SIZE = 25
OUTCOMES = ("stored", "duplicate")
DecisionId = Annotated[int, PathParameter(description="The rejected decision.")]


@dataclass(frozen=True, slots=True)
class AdmittedNotice:
    """A rejected decision admitted: stored as ``memory`` or found a ``duplicate``."""

    decision: int
    memory: str | None
    outcome: str


def _admitted_notice(
    admitted: str | None, memory: str | None, outcome: str | None
) -> AdmittedNotice | None:
    """What the page says after an admission (from the redirect's query string: shown only
    when it is well formed, never trusted beyond that)."""
    if admitted is None or not (admitted.isdigit() and len(admitted) < 19):
        return None
    if outcome not in OUTCOMES:
        return None
    try:
        memory_id = None if memory is None else str(UUID(memory))
    except ValueError:
        memory_id = None
    return AdmittedNotice(int(admitted), memory_id, outcome)


class GatePages(ConsolePages):
    path = "/t/{tenant_id:str}/gate"

    @view("/")
    def index(
        self,
        screen: ScreenDep,
        decision: Annotated[
            str | None, Parameter(description="accepted, rejected, forced or duplicate.")
        ] = None,
        kind: Annotated[str | None, Parameter(description="note or window.")] = None,
        cursor: Annotated[str | None, Parameter(description="Next page.")] = None,
        admitted: Annotated[str | None, Parameter(description="Admitted.")] = None,
        memory: Annotated[str | None, Parameter(description="Its memory.")] = None,
        outcome: Annotated[str | None, Parameter(description="stored?")] = None,
        limit: Annotated[int, Parameter(description="Decisions a page, 1-200.")] = PAGE_SIZE,
    ) -> Template:
        filters = {"decision": blank(decision), "kind": blank(kind)}
        found = gate_log.list_decisions(
            screen.elephant,
            screen.tenant,
            decision=filters["decision"],
            kind=filters["kind"],
            limit=limit,
            cursor=blank(cursor),
        )
        return screen.render(
            "gate/index.html",
            title="Gate",
            active="gate",
            summary=gate_log.metrics(screen.elephant, screen.tenant, recent=0),
            found=found,
            filters=filters,
            keep={**filters, "limit": None if limit == PAGE_SIZE else limit},
            paged=blank(cursor) is not None,
            decisions=gate_log.DECISIONS,
            kinds=gate_log.KINDS,
            notice=_admitted_notice(admitted, memory, outcome),
        )

    @post("/{decision_id:int}/admit", opt=CONSOLE_WRITE.opt, sync_to_thread=True)
    def admit(self, screen: ScreenDep, decision_id: DecisionId) -> Redirect:
        if decision_id < 1:
            raise InvalidInput(f"decision: {decision_id} is not a decision id")
        result = gate_log.admit(screen.elephant, screen.tenant, decision_id, actor=screen.actor)
        target = query_string(admitted=decision_id, memory=result.memory_id, outcome=result.status)
        return Redirect(f"{screen.base}/gate{target}#admitted", status_code=303)
