"""The Conversations pages: the list, one lossless transcript with its windows marked, handoffs.

A transcript shows every turn (anchor ``#turn-<seq>``, which search hits link to) with a
column of brackets per window: green stored, amber a duplicate, dashed red rejected. The
same windows are listed as text with their turn ranges, gate decision and the stored
memory. Thin adapters over app.services.memory.transcripts (as GET /conversations is).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from litestar import Controller, Request, get
from litestar.di import NamedDependency
from litestar.params import Parameter, PathParameter
from litestar.response import Template

from app.console.forms import blank
from app.console.render import page
from app.errors import InvalidInput
from app.services.common import paging
from app.services.memory import transcripts
from app.services.runtime import Elephant
from app.web.route_access import CONSOLE_READ

PAGE_SIZE = 25
Text = Annotated[str | None, Parameter(description="As typed in the form.")]


def _limit(value: str | None) -> int:
    if not value:
        return PAGE_SIZE
    try:
        return paging.check_limit(int(value))
    except ValueError:
        raise InvalidInput(
            f"limit: must be a whole number 1-{paging.MAX_LIMIT}, got {value!r}"
        ) from None


@dataclass(frozen=True)
class Bracket:
    """One cell of a turn's bracket column: the window covering it there, if any."""

    window: int | None  # index into the windows list
    status: str
    start: bool
    end: bool


def bracket_columns(windows: list[transcripts.TranscriptWindow]) -> list[int]:
    """A column per window such that windows sharing a turn never share a column
    (greedy interval colouring: windows come sorted by their first turn)."""
    ends: list[int] = []  # per column, the last turn of its latest window
    columns = []
    for window in windows:
        free = next((i for i, end in enumerate(ends) if end < window.turn_start), None)
        if free is None:
            ends.append(window.turn_end)
            columns.append(len(ends) - 1)
        else:
            ends[free] = window.turn_end
            columns.append(free)
    return columns


def bracket_rows(
    transcript: transcripts.Transcript,
) -> tuple[dict[int, list[Bracket]], dict[int, list[int]], int]:
    """Per turn seq: its bracket cells, and the windows (indexes) it is in; the column count."""
    columns = bracket_columns(transcript.windows)
    width = max(columns, default=-1) + 1
    cells = {turn.seq: [Bracket(None, "none", False, False)] * width for turn in transcript.turns}
    member: dict[int, list[int]] = {turn.seq: [] for turn in transcript.turns}
    for index, (window, column) in enumerate(zip(transcript.windows, columns, strict=True)):
        for seq in range(window.turn_start, window.turn_end + 1):
            if seq not in cells:
                continue
            row = list(cells[seq])
            row[column] = Bracket(
                index, window.status, seq == window.turn_start, seq == window.turn_end
            )
            cells[seq] = row
            member[seq].append(index)
    return cells, member, width


class ConversationPages(Controller):
    path = "/t/{tenant_id:str}/conversations"
    include_in_schema = False

    @get("/", opt=CONSOLE_READ.opt, sync_to_thread=True)
    def index(
        self,
        request: Request[Any, Any, Any],
        tenant: NamedDependency[str],
        elephant: NamedDependency[Elephant],
        source: Text = None,
        cursor: Text = None,
        limit: Text = None,
    ) -> Template:
        source = blank(source)
        listing = transcripts.list_conversations(
            elephant, tenant, source=source, limit=_limit(limit), cursor=cursor or None
        )
        return page(
            request,
            "conversations/index.html",
            title="Conversations",
            active="conversations",
            listing=listing,
            source=source or "",
            limit=limit or "",
            first_page=cursor is not None,
        )

    @get("/handoffs", opt=CONSOLE_READ.opt, sync_to_thread=True)
    def handoffs(
        self,
        request: Request[Any, Any, Any],
        tenant: NamedDependency[str],
        elephant: NamedDependency[Elephant],
        project: Text = None,
        cursor: Text = None,
        limit: Text = None,
    ) -> Template:
        project = blank(project)
        listing = transcripts.list_handoffs(
            elephant, tenant, project=project, limit=_limit(limit), cursor=cursor or None
        )
        return page(
            request,
            "conversations/handoffs.html",
            title="Session handoffs",
            active="conversations",
            listing=listing,
            project=project or "",
            limit=limit or "",
            first_page=cursor is not None,
        )

    @get("/{conversation_id:str}", opt=CONSOLE_READ.opt, sync_to_thread=True)
    def conversation(
        self,
        request: Request[Any, Any, Any],
        tenant: NamedDependency[str],
        elephant: NamedDependency[Elephant],
        conversation_id: Annotated[
            str, PathParameter(description="Its id, or the id it was committed with.")
        ],
    ) -> Template:
        transcript = transcripts.get_transcript(elephant, tenant, conversation_id)
        cells, member, width = bracket_rows(transcript)
        statuses = [window.status for window in transcript.windows]
        summary = transcript.conversation
        return page(
            request,
            "conversations/conversation.html",
            title=f"Conversation {summary.external_id or summary.id}",
            active="conversations",
            transcript=transcript,
            conversation=summary,
            cells=cells,
            member=member,
            width=width,
            counts={
                status: statuses.count(status) for status in ("stored", "duplicate", "rejected")
            },
        )
