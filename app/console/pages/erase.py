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
from litestar import Controller, Request, get, post
from litestar.di import NamedDependency
from litestar.enums import RequestEncodingType
from litestar.params import Body
from litestar.response import Template

from app.console.render import access_of, page
from app.errors import InvalidInput
from app.services.access.erasure import EraseIn, ErasureReport, erase
from app.services.runtime import Elephant
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


FORM_BODY = Body(media_type=RequestEncodingType.URL_ENCODED)


class ErasePages(Controller):
    path = "/t/{tenant_id:str}/erase"
    include_in_schema = False

    @get("/", opt=CONSOLE_ADMIN.opt, sync_to_thread=False)
    def index(self, request: Request[Any, Any, Any]) -> Template:
        return self._form(request, EraseForm(), None)

    @post("/preview", opt=CONSOLE_ADMIN.opt, sync_to_thread=True, status_code=200)
    def preview(
        self,
        request: Request[Any, Any, Any],
        tenant: NamedDependency[str],
        elephant: NamedDependency[Elephant],
        data: Annotated[EraseForm, FORM_BODY],
    ) -> Template:
        """A dry run: the report of what would go, and the form that makes it so."""
        try:
            wanted = request_of(data, dry_run=True)
        except InvalidInput as exc:
            return self._form(request, data, exc.message)
        report = erase(elephant, tenant, wanted, actor=access_of(request).principal.prefix)
        return self._report(request, data, report, tenant)

    @post("/confirm", opt=CONSOLE_ADMIN.opt, sync_to_thread=True, status_code=200)
    def confirm(
        self,
        request: Request[Any, Any, Any],
        tenant: NamedDependency[str],
        elephant: NamedDependency[Elephant],
        data: Annotated[EraseForm, FORM_BODY],
    ) -> Template:
        """The erasure itself; its report is the page (see the module docstring)."""
        wanted = request_of(data, dry_run=False)
        if wanted.tenant and data.confirm_tenant.strip() != tenant:
            raise InvalidInput(
                f"to erase the whole tenant, type its id ({tenant}) in the confirmation field; "
                "nothing was erased"
            )
        report = erase(elephant, tenant, wanted, actor=access_of(request).principal.prefix)
        return self._report(request, data, report, tenant)

    def _form(
        self, request: Request[Any, Any, Any], form: EraseForm, error: str | None
    ) -> Template:
        return page(
            request,
            "erase/index.html",
            title="Erase",
            active="erase",
            status_code=422 if error else 200,
            form=form,
            error=error,
        )

    def _report(
        self, request: Request[Any, Any, Any], form: EraseForm, report: ErasureReport, tenant: str
    ) -> Template:
        missing = list(getattr(report.target, "missing", []))
        return page(
            request,
            "erase/report.html",
            title="Erase · dry run" if report.dry_run else "Erase · done",
            active="erase",
            form=form,
            report=report,
            target=describe(form, tenant),
            rows=[(table, count) for table, count in report.removed.items()],
            missing=missing,
        )
