"""Passages: the parts of turns and long notes the embedding model can see whole.

A window's vector covers only what fits in the model's token limit, so evidence
deep in a long turn was invisible to the dense lane. Every turn gets one vector
per passage (the turn itself, or overlapping parts of a long one), and a long
note gets passages too; search scores a window by its own vector and by its
best passage (sql/retrieval/hybrid_search.sql), a late interaction over its turns.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from app.db.resources import load_sql
from app.db.runtime import Connection
from app.providers.embedder import Vectors
from app.services.jobs import sources
from app.services.memory.windows import WindowTurn, render_turn

_WORD_RE = re.compile(r"\S+")


@dataclass(frozen=True)
class Passage:
    """One part of a turn (seq) or of a note; ``text`` is what gets embedded."""

    seq: int | None  # the turn's seq in its conversation; None for a note
    ordinal: int
    char_start: int
    char_end: int
    text: str


_SENTENCE_RE = re.compile(r"[^.!?\n]*(?:[.!?]+[\"')\]]*|\n|$)")


def _units(text: str, words: int) -> list[tuple[int, int, int]]:
    """(start, end, word count) of each sentence or line; one longer than ``words`` is cut
    into runs of ``words`` words."""
    units = []
    for sentence in _SENTENCE_RE.finditer(text):
        found = list(_WORD_RE.finditer(text, sentence.start(), sentence.end()))
        for first in range(0, len(found), words):
            run = found[first : first + words]
            units.append((run[0].start(), run[-1].end(), len(run)))
    return units


def spans(text: str, words: int) -> list[tuple[int, int]]:
    """Character spans of parts of whole sentences, at most ``words`` words each; a part
    starts with the last sentence of the one before when both fit, so a statement that
    leans on the sentence before it still has it."""
    units = _units(text, words)
    if not units:
        return []
    parts: list[tuple[int, int]] = []
    first = 0
    while True:
        last, size = first, units[first][2]
        while last + 1 < len(units) and size + units[last + 1][2] <= words:
            last += 1
            size += units[last][2]
        parts.append((units[first][0], units[last][1]))
        if last == len(units) - 1:
            return parts
        overlap = last > first and units[last][2] + units[last + 1][2] <= words
        first = last if overlap else last + 1


def turn_passages(turns: Sequence[WindowTurn], words: int) -> list[Passage]:
    """Every turn's passages, each under the turn's date and speaker as its window shows them."""
    passages = []
    for turn in turns:
        prefix = render_turn(replace(turn, text=""))
        for ordinal, (start, end) in enumerate(spans(turn.text, words)):
            passages.append(Passage(turn.seq, ordinal, start, end, prefix + turn.text[start:end]))
    return passages


def note_passages(text: str, words: int) -> list[Passage]:
    """A note's parts, or none when its own vector already sees all of it."""
    parts = spans(text, words)
    if len(parts) <= 1:
        return []
    return [Passage(None, i, start, end, text[start:end]) for i, (start, end) in enumerate(parts)]


def store_turn_passages(
    conn: Connection,
    tenant: str,
    conversation_id: str,
    passages: Sequence[Passage],
    vectors: Vectors,
) -> None:
    """``passages`` seqs are the stored turns' seqs in ``conversation_id``. A passage
    stored already is left (``ON CONFLICT DO NOTHING``: its only unique keys are
    (turn_id, ordinal) and (memory_id, ordinal), which Citus widens with tenant_id, so no
    conflict target names them; see docs/scale-out.md)."""
    with conn.cursor() as cursor:
        cursor.executemany(
            load_sql("memory/turn_passages.sql"),
            [
                {
                    "tenant": tenant,
                    "ordinal": p.ordinal,
                    "start": p.char_start,
                    "end": p.char_end,
                    "vector": vector,
                    "conversation": conversation_id,
                    "seq": p.seq,
                }
                for p, vector in zip(passages, vectors, strict=True)
            ],
        )


def store_note_passages(
    conn: Connection, tenant: str, memory_id: str, passages: Sequence[Passage], vectors: Vectors
) -> None:
    with conn.cursor() as cursor:
        cursor.executemany(
            load_sql("memory/note_passages.sql"),
            [
                {
                    "tenant": tenant,
                    "memory": memory_id,
                    "ordinal": p.ordinal,
                    "start": p.char_start,
                    "end": p.char_end,
                    "vector": vector,
                }
                for p, vector in zip(passages, vectors, strict=True)
            ],
        )


@dataclass(frozen=True)
class Backfilled:
    written: int  # passages stored
    full: bool  # a batch hit its limit: more may be waiting


def backfill(
    conn: Connection,
    tenant: str,
    embed: Callable[[Sequence[str]], Vectors],
    words: int,
    limit: int = 500,
) -> Backfilled:
    """Passages for up to ``limit`` turns and ``limit`` long notes stored without them
    (the embedder was down, or they were stored before passages existed). Embedded
    first, then written under the locks of app/services/jobs/sources.py to the turns and
    notes still there: an erasure or a sweep meanwhile leaves no passage behind."""
    rows = conn.execute(
        load_sql("memory/turns_without_passages.sql"), {"tenant": tenant, "limit": limit}
    ).fetchall()
    by_conversation: dict[str, list[Passage]] = {}
    for conversation_id, seq, speaker, text, when in rows:
        turn = WindowTurn(int(seq), str(speaker), str(text), when, None)
        by_conversation.setdefault(str(conversation_id), []).extend(turn_passages([turn], words))
    notes = conn.execute(
        load_sql("memory/notes_without_passages.sql"),
        {"tenant": tenant, "words": words, "limit": limit},
    ).fetchall()
    of_notes = {str(memory_id): note_passages(str(text), words) for memory_id, text in notes}
    if not by_conversation and not of_notes:
        return Backfilled(0, False)
    embedded = {key: embed([p.text for p in parts]) for key, parts in by_conversation.items()}
    note_vectors = {key: embed([p.text for p in parts]) for key, parts in of_notes.items()}
    # written under locks, to what is still there (a turn's passages find their turn)
    sources.hold_tenant(conn, tenant)
    written = 0
    for conversation_id, parts in by_conversation.items():
        store_turn_passages(conn, tenant, conversation_id, parts, embedded[conversation_id])
        written += len(parts)
    for memory_id in sources.hold_notes(conn, tenant, list(of_notes), current=False):
        store_note_passages(conn, tenant, memory_id, of_notes[memory_id], note_vectors[memory_id])
        written += len(of_notes[memory_id])
    return Backfilled(written, len(rows) == limit or len(notes) == limit)
