"""The Conversations pages: the list, one lossless transcript with its windows marked, handoffs.

A transcript shows every turn (anchor ``#turn-<seq>``, which search hits link to) with a
column of brackets per window: green stored, amber a duplicate, dashed red rejected. The
same windows are listed as text with their turn ranges, gate decision and the stored
memory. Thin adapters over app.services.memory.transcripts (as GET /conversations is).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from litestar.params import Parameter, PathParameter
from litestar.response import Template

from app.console.forms import blank
from app.console.pages.base import ConsolePages, Screen, ScreenDep, view
from app.errors import InvalidInput
from app.services.common import paging
from app.services.memory import transcripts

PAGE_SIZE = 25
Text = Annotated[str | None, Parameter(description="As typed in the form.")]
ConversationId = Annotated[
    str, PathParameter(description="Its id, or the id it was committed with.")
]


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


def _list_page(
    screen: Screen,
    name: str,
    title: str,
    lister: Callable[..., object],
    cursor: str | None,
    limit: str | None,
    **filter_value: str | None,
) -> Template:
    """A page of a list (conversations, handoffs) filtered by one field: the filter and the
    size as typed, and whether a cursor asked for a later page."""
    wanted = {key: blank(value) for key, value in filter_value.items()}
    listing = lister(
        screen.elephant, screen.tenant, **wanted, limit=_limit(limit), cursor=cursor or None
    )
    typed: dict[str, Any] = {key: value or "" for key, value in wanted.items()}
    return screen.render(
        f"conversations/{name}.html",
        title=title,
        active="conversations",
        listing=listing,
        **typed,
        limit=limit or "",
        first_page=cursor is not None,
    )


class ConversationPages(ConsolePages):
    path = "/t/{tenant_id:str}/conversations"

    @view("/")
    def index(
        self, screen: ScreenDep, source: Text = None, cursor: Text = None, limit: Text = None
    ) -> Template:
        lister = transcripts.list_conversations
        return _list_page(screen, "index", "Conversations", lister, cursor, limit, source=source)

    @view("/handoffs")
    def handoffs(
        self, screen: ScreenDep, project: Text = None, cursor: Text = None, limit: Text = None
    ) -> Template:
        lister = transcripts.list_handoffs
        return _list_page(
            screen, "handoffs", "Session handoffs", lister, cursor, limit, project=project
        )

    @view("/{conversation_id:str}")
    def conversation(self, screen: ScreenDep, conversation_id: ConversationId) -> Template:
        transcript = transcripts.get_transcript(screen.elephant, screen.tenant, conversation_id)
        cells, member, width = bracket_rows(transcript)
        statuses = [window.status for window in transcript.windows]
        summary = transcript.conversation
        return screen.render(
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
