"""The Erase page (admin scope): choose a target, see a dry run's report, then confirm.

Three steps: GET shows the form; POST ``/preview`` runs the erasure as a dry run
(app/services/access/erasure/ deletes inside a savepoint and rolls it back, so the
report is the one the real run gives) and shows it with a Confirm form carrying
the same request; POST ``/confirm`` erases and shows the final report. Erasing the
whole tenant also asks for the tenant id to be typed.

The final report is rendered by the confirming POST itself rather than after a
redirect: it exists nowhere else (the audit row keeps counts and a digest of the
target, never the names), and a resubmitted confirm would only find nothing left
to erase (the erasure is idempotent). The service audits every run, dry or not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any

import pydantic
from litestar import get, post
from litestar.enums import RequestEncodingType
from litestar.params import Body
from litestar.response import Template

from app.console.pages.base import ConsolePages, Screen, ScreenDep
from app.errors import InvalidInput
from app.services.access.erasure import EraseIn, ErasureReport, erase
from app.web.route_access import CONSOLE_ADMIN

KINDS = ("subject", "conversation", "source", "ids", "tenant")
_SEPARATORS = re.compile(r"[\s,;]+")


@dataclass
class EraseForm:
    """What the form posts: the kind of target and the field(s) of that kind."""

    kind: str = "subject"
    subject: str = ""
    aliases: str = ""  # comma or newline separated
    conversation_id: str = ""
    source: str = ""
    memory_ids: str = ""  # whitespace or comma separated uuids
    fact_ids: str = ""
    confirm_tenant: str = ""  # the tenant id, typed to confirm erasing the whole tenant


def _items(text: str, pattern: re.Pattern[str] = _SEPARATORS) -> list[str]:
    return [item for item in pattern.split(text.strip()) if item]


def request_of(form: EraseForm, *, dry_run: bool) -> EraseIn:
    """The service's request for the kind chosen (other fields are ignored)."""
    kind = form.kind
    if kind not in KINDS:
        raise InvalidInput(f"kind: choose one of {', '.join(KINDS)}")
    fields: dict[str, Any] = {"dry_run": dry_run}
    if kind == "subject":
        fields["subject"] = form.subject
        fields["aliases"] = _items(form.aliases, re.compile(r"\s*[,\n]\s*"))
    elif kind == "conversation":
        fields["conversation_id"] = form.conversation_id.strip()
    elif kind == "source":
        fields["source"] = form.source.strip()
    elif kind == "ids":
        fields["memory_ids"] = _items(form.memory_ids)
        fields["fact_ids"] = _items(form.fact_ids)
    else:
        fields["tenant"] = True
    try:
        return EraseIn.model_validate(fields)
    except pydantic.ValidationError as exc:
        raise InvalidInput.from_validation(exc) from None


def describe(form: EraseForm, tenant: str) -> str:
    """The target in words, for the report's heading."""
    if form.kind == "subject":
        aliases = _items(form.aliases, re.compile(r"\s*[,\n]\s*"))
        also = f" (also known as {', '.join(aliases)})" if aliases else ""
        return f"everything naming {form.subject.strip()}{also}"
    if form.kind == "conversation":
        return f"the conversation {form.conversation_id.strip()}"
    if form.kind == "source":
        return f"everything from the source {form.source.strip()}"
    if form.kind == "ids":
        memories, facts = len(_items(form.memory_ids)), len(_items(form.fact_ids))
        return f"{memories} memories and {facts} facts by id, with what derives from them"
    return f"the whole tenant {tenant}: every row, its graph and its API keys"


Form = Annotated[EraseForm, Body(media_type=RequestEncodingType.URL_ENCODED)]


def _form(screen: Screen, form: EraseForm, error: str | None) -> Template:
    return screen.render(
        "erase/index.html",
        title="Erase",
        active="erase",
        status_code=422 if error else 200,
        form=form,
        error=error,
    )


def _report(screen: Screen, form: EraseForm, report: ErasureReport) -> Template:
    missing = list(getattr(report.target, "missing", []))
    return screen.render(
        "erase/report.html",
        title="Erase · dry run" if report.dry_run else "Erase · done",
        active="erase",
        form=form,
        report=report,
        target=describe(form, screen.tenant),
        rows=[(table, count) for table, count in report.removed.items()],
        missing=missing,
    )


class ErasePages(ConsolePages):
    path = "/t/{tenant_id:str}/erase"

    @get("/", opt=CONSOLE_ADMIN.opt, sync_to_thread=False)
    def index(self, screen: ScreenDep) -> Template:
        return _form(screen, EraseForm(), None)

    @post("/preview", opt=CONSOLE_ADMIN.opt, sync_to_thread=True, status_code=200)
    def preview(self, screen: ScreenDep, data: Form) -> Template:
        """A dry run: the report of what would go, and the form that makes it so."""
        try:
            wanted = request_of(data, dry_run=True)
        except InvalidInput as exc:
            return _form(screen, data, exc.message)
        report = erase(screen.elephant, screen.tenant, wanted, actor=screen.actor)
        return _report(screen, data, report)

    @post("/confirm", opt=CONSOLE_ADMIN.opt, sync_to_thread=True, status_code=200)
    def confirm(self, screen: ScreenDep, data: Form) -> Template:
        """The erasure itself; its report is the page (see the module docstring)."""
        wanted = request_of(data, dry_run=False)
        if wanted.tenant and data.confirm_tenant.strip() != screen.tenant:
            raise InvalidInput(
                f"to erase the whole tenant, type its id ({screen.tenant}) in the confirmation "
                "field; nothing was erased"
            )
        report = erase(screen.elephant, screen.tenant, wanted, actor=screen.actor)
        return _report(screen, data, report)
