"""Conversations as they were said: the list, one lossless transcript with its windows, handoffs.

A conversation keeps every turn (``turns``); commit cut it into overlapping windows and
gated each one: stored (a ``memories`` row with its turn range), a duplicate of a stored
memory, or rejected. The gate's log names each window's conversation and turns
(migration 0011), so every window shows with its decision; a stored window logged before
that still shows, from ``memories``.

Handoffs are what a closed session left for the next one (app.services.memory.sessions).
Everything is read in the caller's tenant (row-level security), on the primary, so a
page shows a commit made just before it. The statements are sql/memory/ (the summary's
and a handoff's columns written once, as fragments).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from app.db.resources import load_sql, load_statement
from app.db.runtime import Connection
from app.errors import NotFound
from app.services.common import paging
from app.services.runtime import Elephant

WindowStatus = Literal["stored", "duplicate", "rejected"]


# ------------------------------------------------------------------ results


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """A conversation in the list: its ids, source, dates and counts."""

    id: str
    external_id: str | None
    source: str
    session_date: datetime | None
    created_at: datetime
    turns: int
    windows: int  # stored windows (memories) of it
    speakers: list[str]
    first_turn_at: datetime | None
    last_turn_at: datetime | None
    project: str | None  # set when it was a closed session


@dataclass(frozen=True, slots=True)
class ConversationPage:
    """Newest first; ``next_cursor`` continues after the last item (None: last page)."""

    items: list[ConversationSummary]
    total: int
    limit: int
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class TranscriptTurn:
    """One turn as stored: ``seq`` counts from 0 in the conversation; ``turn_id`` is the
    caller's id for it, if any; ``occurred_at`` its time (else the session date)."""

    seq: int
    speaker: str
    text: str
    occurred_at: datetime | None
    turn_id: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class TranscriptWindow:
    """A window commit cut from the turns ``turn_start``-``turn_end`` (inclusive) and the
    gate's decision on it. ``memory_id``: the stored memory, or the one it duplicates.
    ``decision`` is the gate log's (accepted, forced, duplicate, rejected), None when its
    log row is gone; the scores likewise."""

    turn_start: int
    turn_end: int
    status: WindowStatus
    memory_id: str | None
    decision: str | None = None
    composite: float | None = None
    threshold: float | None = None
    reason: str | None = None
    scorer: str | None = None
    decided_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class SessionHandoff:
    """What a closed session left for the next one of its project."""

    id: int
    project: str
    conversation_id: str | None
    created_at: datetime
    summary: str
    decisions: list[str]
    open_questions: list[str]
    next_steps: list[str]
    generator: str


@dataclass(frozen=True, slots=True)
class HandoffPage:
    items: list[SessionHandoff]
    limit: int
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class Transcript:
    """One conversation: every turn in order, its windows by turn range, its handoffs."""

    conversation: ConversationSummary
    turns: list[TranscriptTurn]
    windows: list[TranscriptWindow]
    handoffs: list[SessionHandoff]


@dataclass(frozen=True, slots=True)
class TurnLink:
    """Where a search hit came from: turns ``seq_start``-``seq_end`` of a conversation."""

    conversation_id: str
    seq_start: int
    seq_end: int


# ------------------------------------------------------------------ the list


def _summary(row: Sequence[Any]) -> ConversationSummary:
    return ConversationSummary(
        id=str(row[0]),
        external_id=row[1],
        source=row[2],
        session_date=row[3],
        created_at=row[4],
        turns=int(row[5]),
        windows=int(row[6]),
        speakers=[str(name) for name in row[7]],
        first_turn_at=row[8],
        last_turn_at=row[9],
        project=row[10],
    )


def list_conversations(
    elephant: Elephant,
    tenant: str,
    *,
    source: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> ConversationPage:
    """Newest first, by keyset (created_at, id): a commit between two pages shifts nothing."""
    paging.check_limit(limit)
    after_at, after_id = paging.after_newest("conversations", cursor, UUID)
    params = {
        "tenant": tenant,
        "source": source,
        "after_at": after_at,
        "after_id": after_id,
        "limit": limit + 1,
    }
    with elephant.db.reading(tenant, "primary") as conn:
        rows = conn.execute(load_statement("memory/conversations_page.sql"), params).fetchall()
        total_row = conn.execute(load_sql("memory/conversations_count.sql"), params).fetchone()
    items = [_summary(row) for row in rows[:limit]]
    next_cursor = None
    if len(rows) > limit and items:
        last = items[-1]
        next_cursor = paging.encode("conversations", (last.created_at, UUID(last.id)))
    total = int(total_row[0]) if total_row else 0
    return ConversationPage(items=items, total=total, limit=limit, next_cursor=next_cursor)


# ------------------------------------------------------------------ one transcript


def get_transcript(elephant: Elephant, tenant: str, conversation: str) -> Transcript:
    """The conversation named by its uuid or the caller's id for it; NotFound otherwise."""
    with elephant.db.reading(tenant, "primary") as conn:
        row = _find(conn, tenant, conversation)
        if row is None:
            raise NotFound(
                f"no conversation {conversation!r} in this tenant: name it by its id or the "
                "conversation_id it was committed with"
            )
        summary = _summary(row)
        here = {"tenant": tenant, "conversation": summary.id}
        turns = [
            TranscriptTurn(int(r[0]), r[1], r[2], r[3], r[4], r[5])
            for r in conn.execute(load_sql("memory/transcript_turns.sql"), here).fetchall()
        ]
        windows = _windows(conn, tenant, summary.id)
        handoffs = [
            _handoff(r)
            for r in conn.execute(
                load_statement("memory/conversation_handoffs.sql"), here
            ).fetchall()
        ]
    return Transcript(summary, turns, windows, handoffs)


def _find(conn: Connection, tenant: str, conversation: str) -> Sequence[Any] | None:
    uuid = _as_uuid(conversation)
    return conn.execute(
        load_statement("memory/conversation_find.sql"),
        {"tenant": tenant, "name": conversation, "uuid": uuid},
    ).fetchone()


def _as_uuid(value: str) -> UUID | None:
    try:
        return UUID(value)
    except ValueError:
        return None


def _windows(conn: Connection, tenant: str, conversation_id: str) -> list[TranscriptWindow]:
    """Every window the gate decided on, from its log (conversation and turns, migration
    0011); a stored window without such a row (logged before 0011) still shows, from
    ``memories``, without its decision."""
    here = {"tenant": tenant, "conversation": conversation_id}
    found = [_window(row) for row in conn.execute(load_sql("memory/window_decisions.sql"), here)]
    logged = {(w.turn_start, w.turn_end, w.memory_id) for w in found if w.status == "stored"}
    for memory_id, start, end in conn.execute(
        load_sql("memory/stored_windows.sql"), here
    ).fetchall():
        if (int(start), int(end), str(memory_id)) not in logged:
            found.append(TranscriptWindow(int(start), int(end), "stored", str(memory_id)))
    found.sort(key=lambda w: (w.turn_start, w.turn_end))
    return found


def _window(row: Sequence[Any]) -> TranscriptWindow:
    start, end, memory_id, decision, composite, threshold, reason, scorer, decided_at = row
    status: WindowStatus = (
        "duplicate"
        if decision == "duplicate"
        else "rejected"
        if decision == "rejected"
        else "stored"
    )
    return TranscriptWindow(
        turn_start=int(start),
        turn_end=int(end),
        status=status,
        memory_id=None if memory_id is None or status == "rejected" else str(memory_id),
        decision=decision,
        composite=composite,
        threshold=threshold,
        reason=reason,
        scorer=scorer,
        decided_at=decided_at,
    )


# ------------------------------------------------------------------ handoffs


def _handoff(row: Sequence[Any]) -> SessionHandoff:
    return SessionHandoff(
        id=int(row[0]),
        project=row[1],
        conversation_id=None if row[2] is None else str(row[2]),
        created_at=row[3],
        summary=row[4],
        decisions=[str(item) for item in row[5]],
        open_questions=[str(item) for item in row[6]],
        next_steps=[str(item) for item in row[7]],
        generator=row[8],
    )


def list_handoffs(
    elephant: Elephant,
    tenant: str,
    *,
    project: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> HandoffPage:
    """Every handoff of the tenant's closed sessions, newest first (GET /handoff gives only
    a project's latest)."""
    paging.check_limit(limit)
    after_at, after_id = paging.after_newest("handoffs", cursor, int)
    with elephant.db.reading(tenant, "primary") as conn:
        rows = conn.execute(
            load_statement("memory/handoffs_page.sql"),
            {
                "tenant": tenant,
                "project": project,
                "after_at": after_at,
                "after_id": after_id,
                "limit": limit + 1,
            },
        ).fetchall()
    items = [_handoff(row) for row in rows[:limit]]
    next_cursor = None
    if len(rows) > limit and items:
        next_cursor = paging.encode("handoffs", (items[-1].created_at, items[-1].id))
    return HandoffPage(items=items, limit=limit, next_cursor=next_cursor)


# ------------------------------------------------------------------ search hits → turns


def turn_links(
    elephant: Elephant, tenant: str, hits: Iterable[tuple[str, str]]
) -> dict[str, TurnLink]:
    """hit id → the conversation turns it came from, for (id, kind) search hits: a window's
    own turn range; a fact's cited turns (the caller's turn ids), else its window's range.
    Notes and facts of notes have no turns and are left out."""
    memory_ids = [_as_uuid(hit_id) for hit_id, kind in hits if kind != "fact"]
    fact_ids = [_as_uuid(hit_id) for hit_id, kind in hits if kind == "fact"]
    links: dict[str, TurnLink] = {}
    if not memory_ids and not fact_ids:
        return links
    with elephant.db.reading(tenant, "primary") as conn:
        rows = conn.execute(
            load_sql("memory/turn_links.sql"),
            {
                "tenant": tenant,
                "memories": [i for i in memory_ids if i],
                "facts": [i for i in fact_ids if i],
            },
        ).fetchall()
    for hit_id, conversation_id, start, end in rows:
        if start is not None:
            links[hit_id] = TurnLink(
                conversation_id, int(start), int(end if end is not None else start)
            )
    return links
