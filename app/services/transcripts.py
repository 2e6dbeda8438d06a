"""Conversations as they were said: the list, one lossless transcript with its windows, handoffs.

A conversation keeps every turn (``turns``); commit cut it into overlapping windows and
gated each one: stored (a ``memories`` row with its turn range), a duplicate of a stored
memory, or rejected. Only stored windows have a row, so the others are read back from
the gate's log: everything one commit writes shares its transaction's timestamp, so the
log rows (kind ``window``, in window order) of the commit that wrote a run of turns are
those stamped with the turns' ``created_at``; rebuilding the windows of that run
(app.services.windows) and matching their content hashes, in order, to the log rows
gives each window its turn range and decision. A run whose log rows were erased or never
written (an import) still shows its stored windows, from ``memories``.

Handoffs are what a closed session left for the next one (app.services.sessions).
Everything is read in the caller's tenant (row-level security), on the primary, so a
page shows a commit made just before it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from app.db.runtime import Connection
from app.errors import NotFound
from app.services import paging
from app.services.runtime import Elephant
from app.services.text import content_hash
from app.services.windows import WindowTurn, build_windows

WindowStatus = Literal["stored", "duplicate", "rejected"]
MAX_WINDOW_SIZE = 100  # ConversationIn.window_size's bound
_NEAR_DUPLICATE = re.compile(
    r"near duplicate of ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
)


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
    """One conversation: every turn in order, its windows by turn range, its handoffs.
    ``unplaced``: gate decisions of its commits that could not be matched to turns."""

    conversation: ConversationSummary
    turns: list[TranscriptTurn]
    windows: list[TranscriptWindow]
    handoffs: list[SessionHandoff]
    unplaced: int


@dataclass(frozen=True, slots=True)
class TurnLink:
    """Where a search hit came from: turns ``seq_start``-``seq_end`` of a conversation."""

    conversation_id: str
    seq_start: int
    seq_end: int


# ------------------------------------------------------------------ the list

_SUMMARY_COLUMNS = """
    c.id, c.external_id, c.source, c.session_date, c.created_at,
    (SELECT count(*) FROM turns AS t WHERE t.conversation_id = c.id)::int,
    (SELECT count(*) FROM memories AS m WHERE m.conversation_id = c.id AND m.kind = 'window')::int,
    coalesce((SELECT array_agg(s.speaker ORDER BY s.first) FROM
              (SELECT t.speaker, min(t.seq) AS first FROM turns AS t
                WHERE t.conversation_id = c.id GROUP BY t.speaker) AS s), '{}'),
    (SELECT min(coalesce(t.occurred_at, t.created_at)) FROM turns AS t
      WHERE t.conversation_id = c.id),
    (SELECT max(coalesce(t.occurred_at, t.created_at)) FROM turns AS t
      WHERE t.conversation_id = c.id),
    c.metadata ->> 'project'"""
_LIST_FILTER = """
    WHERE (%(source)s::text IS NULL OR c.source = %(source)s)
      AND (%(after_at)s::timestamptz IS NULL
           OR (c.created_at, c.id) < (%(after_at)s, %(after_id)s::uuid))"""


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
    after_at, after_id = (None, None)
    if cursor is not None:
        after_at, after_id = paging.decode("conversations", cursor, (datetime, UUID))
    params = {"source": source, "after_at": after_at, "after_id": after_id, "limit": limit + 1}
    with elephant.db.reading(tenant, "primary") as conn:
        rows = conn.execute(
            f"SELECT {_SUMMARY_COLUMNS} FROM conversations AS c {_LIST_FILTER} "
            "ORDER BY c.created_at DESC, c.id DESC LIMIT %(limit)s",
            params,
        ).fetchall()
        total_row = conn.execute(
            "SELECT count(*) FROM conversations AS c "
            "WHERE (%(source)s::text IS NULL OR c.source = %(source)s)",
            params,
        ).fetchone()
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
        row = _find(conn, conversation)
        if row is None:
            raise NotFound(
                f"no conversation {conversation!r} in this tenant: name it by its id or the "
                "conversation_id it was committed with"
            )
        summary = _summary(row)
        turns = [
            TranscriptTurn(int(r[0]), r[1], r[2], r[3], r[4], r[5])
            for r in conn.execute(
                "SELECT seq, speaker, text, occurred_at, source_turn_id, created_at "
                "FROM turns WHERE conversation_id = %s ORDER BY seq",
                (summary.id,),
            ).fetchall()
        ]
        windows, unplaced = _windows(conn, summary.id, turns, elephant.settings.commit)
        handoffs = [
            _handoff(r)
            for r in conn.execute(
                f"SELECT {_HANDOFF_COLUMNS} FROM handoffs WHERE conversation_id = %s "
                "ORDER BY created_at DESC, id DESC",
                (summary.id,),
            ).fetchall()
        ]
    return Transcript(summary, turns, windows, handoffs, unplaced)


def _find(conn: Connection, conversation: str) -> Sequence[Any] | None:
    uuid = _as_uuid(conversation)
    return conn.execute(
        f"SELECT {_SUMMARY_COLUMNS} FROM conversations AS c "
        "WHERE c.external_id = %s OR c.id = %s ORDER BY c.id = %s DESC LIMIT 1",
        (conversation, uuid, uuid),
    ).fetchone()


def _as_uuid(value: str) -> UUID | None:
    try:
        return UUID(value)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class _LogRow:
    memory_id: str | None
    digest: str
    decision: str
    composite: float | None
    threshold: float | None
    reason: str
    scorer: str
    created_at: datetime


def _batches(turns: Sequence[TranscriptTurn]) -> list[list[TranscriptTurn]]:
    """Runs of consecutive turns written by one commit (one transaction timestamp)."""
    runs: list[list[TranscriptTurn]] = []
    for turn in turns:
        if runs and runs[-1][-1].created_at == turn.created_at:
            runs[-1].append(turn)
        else:
            runs.append([turn])
    return runs


def _windows(
    conn: Connection, conversation_id: str, turns: Sequence[TranscriptTurn], commit: Any
) -> tuple[list[TranscriptWindow], int]:
    """Every window of the conversation (see the module docstring) and the count of its
    commits' gate decisions that matched no run of turns."""
    batches = _batches(turns)
    stamps = sorted({batch[0].created_at for batch in batches})
    logs: dict[datetime, list[_LogRow]] = {}
    if stamps:
        for r in conn.execute(
            "SELECT memory_id, content_hash, decision, composite, threshold, reason, scorer, "
            "created_at FROM admission_log WHERE kind = 'window' AND created_at = ANY(%s) "
            "ORDER BY id",
            (stamps,),
        ).fetchall():
            entry = _LogRow(
                None if r[0] is None else str(r[0]), r[1], r[2], r[3], r[4], r[5], r[6], r[7]
            )
            logs.setdefault(entry.created_at, []).append(entry)
    stored = conn.execute(
        "SELECT id, turn_start, turn_end, content_hash FROM memories "
        "WHERE conversation_id = %s AND kind = 'window' AND turn_start IS NOT NULL",
        (conversation_id,),
    ).fetchall()
    by_hash = {str(r[3]): str(r[0]) for r in stored}
    sizes = sorted({int(r[2]) - int(r[1]) + 1 for r in stored})
    hints = [(commit.window_size, min(commit.stride, commit.window_size)), (5, 2)]
    hints += [(size, stride) for size in sizes for stride in range(1, size + 1)]
    placements: list[tuple[tuple[int, int], _LogRow]] = []
    unplaced = 0
    for batch in batches:
        entries = logs.pop(batch[0].created_at, [])
        placed = _place(batch, entries, hints)
        if placed is None:
            unplaced += len(entries)
        else:
            placements.extend(placed)
    # an exact duplicate's memory may belong to another conversation (or be a note)
    elsewhere = [e.digest for _, e in placements if e.digest not in by_hash]
    if elsewhere:
        by_hash.update(
            (str(r[0]), str(r[1]))
            for r in conn.execute(
                "SELECT content_hash, id FROM memories WHERE content_hash = ANY(%s)",
                (elsewhere,),
            ).fetchall()
        )
    found = [_window(start, end, entry, by_hash) for (start, end), entry in placements]
    covered = {(w.turn_start, w.turn_end) for w in found}
    for memory_id, start, end, _ in stored:
        if (int(start), int(end)) not in covered:  # a window whose gate decision is gone
            found.append(TranscriptWindow(int(start), int(end), "stored", str(memory_id)))
    found.sort(key=lambda w: (w.turn_start, w.turn_end))
    return found, unplaced


def _window_turns(batch: Sequence[TranscriptTurn]) -> list[WindowTurn]:
    return [WindowTurn(t.seq, t.speaker, t.text, t.occurred_at, t.turn_id) for t in batch]


def _place(
    batch: Sequence[TranscriptTurn], entries: Sequence[_LogRow], hints: Iterable[tuple[int, int]]
) -> list[tuple[tuple[int, int], _LogRow]] | None:
    """The commit's log rows matched, in order, to the windows of a window size and stride
    whose window texts hash to them; None when no size and stride does."""
    if not entries:
        return None
    wanted = [entry.digest for entry in entries]
    count = len(batch)
    tried: set[tuple[int, int]] = set()
    candidates = list(hints) + [
        (size, stride)
        for size in range(1, min(count, MAX_WINDOW_SIZE) + 1)
        for stride in range(1, size + 1)
    ]
    turns = _window_turns(batch)
    for size, stride in candidates:
        size = min(size, count)  # a run shorter than the window is one window
        stride = min(stride, size)
        if (size, stride) in tried or size < 1:
            continue
        tried.add((size, stride))
        if _window_count(count, size, stride) != len(wanted):
            continue
        windows = build_windows(turns, size, stride)
        if [content_hash(w.text) for w in windows] == wanted:
            return [((w.turn_start, w.turn_end), e) for w, e in zip(windows, entries, strict=True)]
    return None


def _window_count(count: int, size: int, stride: int) -> int:
    """len(window_starts(count, size, stride)), without building the list."""
    if count <= size:
        return 1 if count > 0 else 0
    full = (count - size) // stride + 1
    return full + (1 if (full - 1) * stride + size < count else 0)


def _window(start: int, end: int, entry: _LogRow, by_hash: dict[str, str]) -> TranscriptWindow:
    status: WindowStatus
    memory_id: str | None
    if entry.decision == "duplicate":
        status = "duplicate"
        near = _NEAR_DUPLICATE.search(entry.reason)
        memory_id = by_hash.get(entry.digest) or (near.group(1) if near else None)
    elif entry.decision == "rejected":
        status, memory_id = "rejected", None
    else:  # accepted or forced
        status, memory_id = "stored", entry.memory_id or by_hash.get(entry.digest)
    return TranscriptWindow(
        turn_start=start,
        turn_end=end,
        status=status,
        memory_id=memory_id,
        decision=entry.decision,
        composite=entry.composite,
        threshold=entry.threshold,
        reason=entry.reason,
        scorer=entry.scorer,
        decided_at=entry.created_at,
    )


# ------------------------------------------------------------------ handoffs

_HANDOFF_COLUMNS = (
    "id, project, conversation_id, created_at, summary, decisions, open_questions, "
    "next_steps, generator"
)


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
    after_at, after_id = (None, None)
    if cursor is not None:
        after_at, after_id = paging.decode("handoffs", cursor, (datetime, int))
    with elephant.db.reading(tenant, "primary") as conn:
        rows = conn.execute(
            f"SELECT {_HANDOFF_COLUMNS} FROM handoffs "
            "WHERE (%(project)s::text IS NULL OR project = %(project)s) "
            "AND (%(after_at)s::timestamptz IS NULL OR (created_at, id) < (%(after_at)s, "
            "%(after_id)s::bigint)) ORDER BY created_at DESC, id DESC LIMIT %(limit)s",
            {"project": project, "after_at": after_at, "after_id": after_id, "limit": limit + 1},
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
            "SELECT m.id::text, m.conversation_id::text, m.turn_start, m.turn_end "
            "FROM memories AS m WHERE m.id = ANY(%s) AND m.conversation_id IS NOT NULL "
            "AND m.turn_start IS NOT NULL "
            "UNION ALL "
            "SELECT f.id::text, f.conversation_id::text, "
            "       coalesce(min(t.seq), m.turn_start), coalesce(max(t.seq), m.turn_end) "
            "FROM facts AS f "
            "LEFT JOIN turns AS t ON t.conversation_id = f.conversation_id "
            "     AND t.source_turn_id = ANY(f.source_turn_ids) "
            "LEFT JOIN memories AS m ON m.id = f.memory_id AND m.kind = 'window' "
            "WHERE f.id = ANY(%s) AND f.conversation_id IS NOT NULL "
            "GROUP BY f.id, f.conversation_id, m.turn_start, m.turn_end",
            ([i for i in memory_ids if i], [i for i in fact_ids if i]),
        ).fetchall()
    for hit_id, conversation_id, start, end in rows:
        if start is not None:
            links[hit_id] = TurnLink(
                conversation_id, int(start), int(end if end is not None else start)
            )
    return links
