"""Commit: notes and whole conversations into memory, through dedup and the gate.

Order of work for every text: exact dedup (content hash) → embed → nearest stored
neighbours (novelty and near-dedup in one query) → A-MAC gate → store → enqueue
fact extraction. Embedding happens before the transaction; everything a commit
writes (turns, memories, admission log, jobs) lands in one transaction or not at
all. A duplicate bumps the stored memory's seen count and is never overwritten.

The requests and results are app/services/memory/schemas.py; the statements that
store a note, a conversation, its turns and windows are sql/memory/.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from app.db.resources import load_sql
from app.db.runtime import Connection
from app.db.tenant_indexes import Way, naming_tenant
from app.errors import InvalidInput
from app.providers.embedder import TokenSums, Vectors, normalised
from app.providers.embedder_errors import EmbedderError
from app.services.access.tenants import tenant_owner
from app.services.common.text import content_hash
from app.services.gate import admit as gate
from app.services.gate.admit import LoggedDecision
from app.services.jobs import queue
from app.services.jobs.runner import run_job_now
from app.services.memory import dedup, passages
from app.services.memory.schemas import (
    CommitStatus,
    ConversationIn,
    ConversationResult,
    NoteIn,
    NoteResponse,
    WindowOutcome,
)
from app.services.memory.window_vectors import pooled_windows, pooling
from app.services.memory.windows import Window, WindowTurn, build_windows
from app.services.ops import metrics
from app.services.runtime import Elephant

EXTRACT_JOB = "extract_facts"
TURNS_PER_EXTRACTION_JOB = 20


# ------------------------------------------------------------------ shared steps


@dataclass(frozen=True)
class _Candidate:
    text: str
    digest: str
    embedding: Vectors | None  # a row; None when the embedder is down


def check_length(elephant: Elephant, text: str, where: str) -> None:
    """The longest note or turn accepted (commit.max_text_chars); an import checks the
    notes and turns of its file with it too (app/services/transfer/rules.py)."""
    limit = elephant.settings.commit.max_text_chars
    if len(text) > limit:
        raise InvalidInput(
            f"{where} is {len(text)} characters; the limit is {limit} (commit.max_text_chars): "
            "split it into several notes or a conversation"
        )


def embed_or_none(elephant: Elephant, texts: Sequence[str]) -> Vectors | None:
    try:
        with metrics.embedding("document", len(texts)):
            return elephant.embedder.embed_documents(texts)
    except EmbedderError:
        return None  # stored without vectors; an embed job fills them in later


def _nearest(
    conn: Connection,
    tenant: str,
    embeddings: Vectors,
    k: int,
    exclude_conversation: str | None = None,
    way: Way = "exact",
) -> dict[int, list[tuple[str, str, float]]]:
    """ord (0-based) -> [(memory id, text, similarity)], most similar first."""
    text = load_sql("memory/nearest_memories.sql")
    if way == "own":  # its own HNSW index
        text = naming_tenant(text, tenant)
    rows = conn.execute(
        text,
        {
            "exact": way == "exact",
            "tenant": tenant,
            "vectors": list(embeddings),
            "k": k,
            "exclude_conversation": exclude_conversation,
        },
    ).fetchall()
    found: dict[int, list[tuple[str, str, float]]] = {}
    for ordinal, memory_id, text, similarity in rows:
        found.setdefault(int(ordinal) - 1, []).append((str(memory_id), text, float(similarity)))
    return found


def _near_duplicate(
    elephant: Elephant, text: str, neighbours: list[tuple[str, str, float]]
) -> dedup.Screening:
    """Close neighbours by the cosine rule; merge only into one with the same information
    (app.services.memory.dedup), so an update ("port 8080" -> "port 9090") is never swallowed."""
    return dedup.screen(text, neighbours, elephant.settings.dedup)


def _merged_reason(near: dedup.NearMatch) -> str:
    return f"near duplicate of {near.memory_id} (cosine {near.similarity:.3f}), same information"


def _kept_reason(screening: dedup.Screening, *, force: bool) -> str | None:
    """Why close neighbours did not absorb the text, for the admission log."""
    if force and screening.duplicate is not None:
        near = screening.duplicate
        cosine = f"cosine {near.similarity:.3f}"
        return f"near duplicate of {near.memory_id} ({cosine}) not merged: force"
    if not screening.differing:
        return None
    near, others = screening.differing[0], len(screening.differing) - 1
    also = f" (and {others} more close neighbour{'s' * (others != 1)})" if others else ""
    return (
        f"near duplicate of {near.memory_id} (cosine {near.similarity:.3f}) but differs: "
        f"{dedup.describe(near.differences)}{also}; novelty measured without it"
    )


def _novelty_similarity(
    hits: list[tuple[str, str, float]], screening: dedup.Screening
) -> float | None:
    """The nearest neighbour's cosine, skipping close neighbours that say something else:
    the changed value is exactly what is new, so they must not make the text look stale."""
    differing = {match.memory_id for match in screening.differing}
    return max((hit[2] for hit in hits if hit[0] not in differing), default=None)


def _bump(conn: Connection, tenant: str, memory_id: str) -> None:
    conn.execute(load_sql("memory/seen_again.sql"), {"tenant": tenant, "memory": memory_id})


def _existing_by_hash(conn: Connection, tenant: str, digests: Sequence[str]) -> dict[str, str]:
    rows = conn.execute(
        "SELECT content_hash, id FROM memories WHERE tenant_id = %s AND content_hash = ANY(%s)",
        (tenant, list(digests)),
    ).fetchall()
    return {str(digest): str(memory_id) for digest, memory_id in rows}


def _screen(
    elephant: Elephant,
    conn: Connection,
    tenant: str,
    candidates: Sequence[_Candidate],
    *,
    force: bool,
    exclude_conversation: str | None = None,
) -> list[tuple[gate.GateVerdict, str | None]]:
    """Per candidate: its verdict and, for a duplicate, the memory it duplicates."""
    existing = _existing_by_hash(conn, tenant, [c.digest for c in candidates])
    embedded = [i for i, c in enumerate(candidates) if c.embedding is not None]
    neighbours: dict[int, list[tuple[str, str, float]]] = {}
    if embedded:
        vectors = np.stack([candidates[i].embedding for i in embedded])  # type: ignore[misc]
        found = _nearest(
            conn,
            tenant,
            vectors,
            elephant.settings.gate.novelty_neighbours,
            exclude_conversation,
            elephant.vector_ways.get(conn, tenant),
        )
        neighbours = {embedded[pos]: hits for pos, hits in found.items()}
    threshold = gate.tenant_threshold(conn, elephant, tenant)
    results: list[tuple[gate.GateVerdict, str | None] | None] = [None] * len(candidates)
    to_judge: list[int] = []
    similarities: list[float | None] = []
    notes: dict[int, str] = {}
    for i, candidate in enumerate(candidates):
        if candidate.digest in existing:
            reason = "exact duplicate (same content hash)"
            if force:
                reason += ": the text is already stored, force does not store it twice"
            results[i] = (gate.duplicate_verdict(threshold, reason), existing[candidate.digest])
            continue
        hits = neighbours.get(i, [])
        screening = _near_duplicate(elephant, candidate.text, hits)
        if screening.duplicate is not None and not force:
            reason = _merged_reason(screening.duplicate)
            results[i] = (gate.duplicate_verdict(threshold, reason), screening.duplicate.memory_id)
            continue
        note = _kept_reason(screening, force=force)
        if note is not None:
            notes[i] = note
        to_judge.append(i)
        similarities.append(_novelty_similarity(hits, screening))
    verdicts = gate.judge(
        elephant, conn, tenant, [candidates[i].text for i in to_judge], similarities, force=force
    )
    for i, verdict in zip(to_judge, verdicts, strict=True):
        if i in notes:
            verdict = replace(verdict, reason=f"{notes[i]}; {verdict.reason}")
        if candidates[i].embedding is None:
            verdict = replace(
                verdict,
                reason=verdict.reason
                + "; novelty unknown (embedder unavailable, vector backfilled later)",
            )
        results[i] = (verdict, None)
    return [result for result in results if result is not None]


# ------------------------------------------------------------------ notes


def commit_note(
    elephant: Elephant, tenant: str, note: NoteIn, *, wait: bool = False
) -> NoteResponse:
    """Store one note, unless it is a duplicate or the gate rejects it; the result holds
    the gate's scores as computed (/commit answers with ``rounded()``)."""
    check_length(elephant, note.text, "text")
    digest = content_hash(note.text)
    parts = passages.note_passages(note.text, elephant.settings.embedding.passage_words)
    vectors = embed_or_none(elephant, [note.text] + [p.text for p in parts])
    candidate = _Candidate(note.text, digest, None if vectors is None else vectors[0])
    memory_id: str | None = None
    duplicate_of: str | None = None
    job_id: int | None = None
    status: CommitStatus = "rejected"
    with elephant.db.tenant(tenant) as conn:
        verdict, duplicate_of = _screen(elephant, conn, tenant, [candidate], force=note.force)[0]
        if verdict.decision == "duplicate":
            assert duplicate_of is not None
            _bump(conn, tenant, duplicate_of)
            memory_id, status = duplicate_of, "duplicate"
        elif verdict.admitted:
            row = conn.execute(
                load_sql("memory/insert_note.sql"),
                {
                    "tenant": tenant,
                    "text": note.text,
                    "embedding": candidate.embedding,
                    "source": note.source,
                    "importance": 50.0 if note.importance is None else note.importance,
                    "event_at": note.occurred_at,
                    "digest": digest,
                    "metadata": json.dumps(note.metadata),
                },
            ).fetchone()
            assert row is not None
            memory_id, status = str(row[0]), "stored"
            job_id = follow_up_note(elephant, conn, tenant, memory_id, note.subject, vectors, parts)
        gate.log_decisions(
            conn,
            tenant,
            [LoggedDecision(verdict, memory_id, "note", note.source, note.text, digest)],
        )
    facts: int | None = None
    job_status: str | None = None
    if wait and job_id is not None:
        facts, job_status = _run_now(elephant, tenant, job_id)
    return NoteResponse(
        memory_id=memory_id,
        status=status,
        duplicate_of=duplicate_of,
        gate=verdict,
        job_id=job_id,
        job_status=job_status,
        facts=facts,
    )


def follow_up_note(
    elephant: Elephant,
    conn: Connection,
    tenant: str,
    memory_id: str,
    subject: str | None,
    vectors: Vectors | None,
    parts: Sequence[passages.Passage],
) -> int:
    """What a stored note needs next, in its transaction: its fact extraction (queued;
    the job's id), an embed job when the embedder was down, else its passages."""
    # who "I" is, fixed now: a later change of the tenant's owner does not rewrite it
    owner = subject or tenant_owner(conn, elephant, tenant).owner
    job_id = queue.enqueue(
        conn,
        tenant,
        EXTRACT_JOB,
        {"memory_id": memory_id, "subject": owner},
        max_attempts=elephant.settings.worker.max_attempts,
    )
    if vectors is None:
        enqueue_backfill(elephant, conn, tenant)
    elif parts:
        passages.store_note_passages(conn, tenant, memory_id, parts, vectors[1:])
    return job_id


def enqueue_backfill(elephant: Elephant, conn: Connection, tenant: str) -> None:
    pending = conn.execute(load_sql("memory/embed_job_pending.sql"), {"tenant": tenant}).fetchone()
    if pending is None:
        queue.enqueue(
            conn, tenant, "embed_memories", {}, max_attempts=elephant.settings.worker.max_attempts
        )


def _run_now(elephant: Elephant, tenant: str, job_id: int) -> tuple[int, str]:
    return run_job_now(elephant, tenant, job_id)


# ------------------------------------------------------------------ conversations


def _window_turns(conversation: ConversationIn) -> list[WindowTurn]:
    return [
        WindowTurn(
            seq=seq,
            speaker=turn.speaker,
            text=turn.text,
            when=turn.timestamp or conversation.session_date,
            source_turn_id=turn.id,
        )
        for seq, turn in enumerate(conversation.turns)
    ]


def _window_and_passage_vectors(
    elephant: Elephant, windows: Sequence[Window], parts: Sequence[passages.Passage]
) -> tuple[Vectors | None, Vectors | None]:
    """Window and turn-passage vectors, both None when the embedder is down. With
    embedding.window_vectors = pooled (and an embedder that gives token sums) the model
    reads each passage once and the windows are pooled from them
    (app/services/memory/window_vectors.py); otherwise it reads the windows too."""
    embedder = elephant.embedder
    covered = {p.seq for p in parts}
    every_window_has_parts = all(
        any(seq in covered for seq in range(w.turn_start, w.turn_end + 1)) for w in windows
    )
    if every_window_has_parts and pooling(elephant.settings.embedding, embedder):
        assert isinstance(embedder, TokenSums)
        try:
            with metrics.embedding("document", len(parts)):
                sums = embedder.embed_document_sums([p.text for p in parts])
        except EmbedderError:
            return None, None  # stored without vectors; an embed job fills them in later
        return pooled_windows(windows, parts, sums), normalised(sums.sums)
    embedded = embed_or_none(
        elephant, [window.text for window in windows] + [p.text for p in parts]
    )
    if embedded is None:
        return None, None
    return embedded[: len(windows)], embedded[len(windows) :]


def commit_conversation(
    elephant: Elephant, tenant: str, conversation: ConversationIn, *, wait: bool = False
) -> ConversationResult:
    limits = elephant.settings.commit
    if len(conversation.turns) > limits.max_turns:
        raise InvalidInput(
            f"{len(conversation.turns)} turns; the limit is {limits.max_turns} per call "
            "(commit.max_turns): send the conversation in parts with the same conversation_id"
        )
    for index, turn in enumerate(conversation.turns):
        check_length(elephant, turn.text, f"turns[{index}].text")
    turns = _window_turns(conversation)
    windows = build_windows(turns, conversation.window_size, conversation.stride)
    parts = passages.turn_passages(turns, elephant.settings.embedding.passage_words)
    vectors, part_vectors = _window_and_passage_vectors(elephant, windows, parts)
    candidates = [
        _Candidate(window.text, content_hash(window.text), None if vectors is None else vectors[i])
        for i, window in enumerate(windows)
    ]
    with elephant.db.tenant(tenant) as conn:
        conversation_id, offset = _upsert_conversation(conn, tenant, conversation)
        _insert_turns(conn, tenant, conversation_id, offset, turns)
        if part_vectors is not None:
            shifted = [replace(p, seq=p.seq + offset) for p in parts if p.seq is not None]
            passages.store_turn_passages(conn, tenant, conversation_id, shifted, part_vectors)
        screened = _screen(
            elephant,
            conn,
            tenant,
            candidates,
            force=conversation.force,
            exclude_conversation=conversation_id,
        )
        result = ConversationResult(conversation_id=conversation_id, turns=len(turns))
        stored = _insert_windows(
            conn, tenant, conversation, conversation_id, offset, windows, candidates, screened
        )
        log_rows: list[LoggedDecision] = []
        for window, candidate, (verdict, duplicate_of), memory_id in zip(
            windows, candidates, screened, stored, strict=True
        ):
            if duplicate_of is not None:
                _bump(conn, tenant, duplicate_of)
            status: CommitStatus = (
                "duplicate" if duplicate_of else "stored" if memory_id else "rejected"
            )
            result.windows.append(
                WindowOutcome(
                    memory_id=memory_id or duplicate_of,
                    turn_start=window.turn_start + offset,
                    turn_end=window.turn_end + offset,
                    status=status,
                    composite=verdict.composite,
                    reason=verdict.reason,
                )
            )
            log_rows.append(
                LoggedDecision(
                    verdict,
                    memory_id or duplicate_of,
                    "window",
                    conversation.source,
                    window.text,
                    candidate.digest,
                    conversation_id=conversation_id,
                    turn_start=window.turn_start + offset,
                    turn_end=window.turn_end + offset,
                )
            )
        gate.log_decisions(conn, tenant, log_rows)
        for start in range(0, len(turns), TURNS_PER_EXTRACTION_JOB):
            end = min(start + TURNS_PER_EXTRACTION_JOB, len(turns)) - 1
            payload = {
                "conversation_id": conversation_id,
                "seq_from": start + offset,
                "seq_to": end + offset,
                "session_date": (
                    conversation.session_date.isoformat() if conversation.session_date else None
                ),
            }
            result.job_ids.append(
                queue.enqueue(
                    conn,
                    tenant,
                    EXTRACT_JOB,
                    payload,
                    max_attempts=elephant.settings.worker.max_attempts,
                )
            )
        if vectors is None:
            enqueue_backfill(elephant, conn, tenant)
    if wait:
        outcomes = [_run_now(elephant, tenant, job_id) for job_id in result.job_ids]
        result.facts = sum(count for count, _ in outcomes)
        result.job_statuses = [state for _, state in outcomes]
    return result


def _upsert_conversation(
    conn: Connection, tenant: str, conversation: ConversationIn
) -> tuple[str, int]:
    """The conversation's id and the seq its new turns start at (appending is allowed)."""
    if conversation.conversation_id is not None:
        row = conn.execute(
            "SELECT id FROM conversations WHERE tenant_id = %s AND external_id = %s FOR UPDATE",
            (tenant, conversation.conversation_id),
        ).fetchone()
        if row is not None:
            offset = conn.execute(
                load_sql("memory/next_turn_seq.sql"), {"tenant": tenant, "conversation": row[0]}
            ).fetchone()
            assert offset is not None
            return str(row[0]), int(offset[0])
    row = conn.execute(
        load_sql("memory/insert_conversation.sql"),
        {
            "tenant": tenant,
            "external_id": conversation.conversation_id,
            "source": conversation.source,
            "session_date": conversation.session_date,
            "metadata": json.dumps(conversation.metadata),
        },
    ).fetchone()
    assert row is not None
    return str(row[0]), 0


def _insert_turns(
    conn: Connection,
    tenant: str,
    conversation_id: str,
    offset: int,
    turns: Sequence[WindowTurn],
) -> None:
    # executemany runs in pipeline mode; COPY would be faster but PostgreSQL does not
    # allow COPY FROM into tables with row-level security.
    with conn.cursor() as cursor:
        cursor.executemany(
            load_sql("memory/insert_turns.sql"),
            [
                {
                    "tenant": tenant,
                    "conversation": conversation_id,
                    "seq": turn.seq + offset,
                    "speaker": turn.speaker,
                    "text": turn.text,
                    "occurred_at": turn.when,
                    "source_turn_id": turn.source_turn_id,
                }
                for turn in turns
            ],
        )


def _insert_windows(
    conn: Connection,
    tenant: str,
    conversation: ConversationIn,
    conversation_id: str,
    offset: int,
    windows: Sequence[Window],
    candidates: Sequence[_Candidate],
    screened: Sequence[tuple[gate.GateVerdict, str | None]],
) -> list[str | None]:
    keep = [i for i, (verdict, dup) in enumerate(screened) if dup is None and verdict.admitted]
    ids: list[str | None] = [None] * len(windows)
    if not keep:
        return ids
    with conn.cursor() as cursor:
        cursor.executemany(
            load_sql("memory/insert_window.sql"),
            [
                {
                    "tenant": tenant,
                    "text": windows[i].text,
                    "embedding": candidates[i].embedding,
                    "source": conversation.source,
                    "conversation": conversation_id,
                    "turn_start": windows[i].turn_start + offset,
                    "turn_end": windows[i].turn_end + offset,
                    "source_turn_ids": windows[i].source_turn_ids,
                    "event_at": windows[i].event_at,
                    "digest": candidates[i].digest,
                }
                for i in keep
            ],
            returning=True,
        )
        for i in keep:
            row = cursor.fetchone()
            assert row is not None
            ids[i] = str(row[0])
            cursor.nextset()
    return ids
