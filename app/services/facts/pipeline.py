"""The extract_facts job: turns or a note → atomic facts → embedded, stored, checked.

Runs inside the job's tenant transaction. An LLM failure raises, so the job is
retried with backoff while the memory it came from stays stored and searchable.

Relative dates resolve against when the words were written, never against the
clock when the job runs (a job may run hours later, or be retried): a note's
occurred_at, else its commit time; a turn's timestamp, else its session date,
else the commit time of its turns. A note's "I" is the subject it was committed
with (the job payload), so first-person facts get a subject and meet the
contradiction check like a conversation's.

A fact an assistant said (its turns' speaker is in facts.assistant_speakers) is stored
with metadata {"said_by": "assistant"} and at most 0.5 confidence; search weighs it down.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from app.config import FactsSettings
from app.db.resources import load_sql
from app.db.runtime import Connection
from app.prompts import extract_facts as extract_prompt
from app.protocol import JSONObject
from app.services.access.tenants import tenant_owner
from app.services.common.text import content_hash
from app.services.facts import contradictions
from app.services.facts.dates import storable
from app.services.facts.model import Assistants, ExtractedFact, TurnInput
from app.services.facts.offline.extract import extract_offline
from app.services.facts.offline.rewrite import ASSISTANT_CONFIDENCE
from app.services.facts.standing import standing_facts
from app.services.graph import linking, mentions
from app.services.jobs import queue, sources
from app.services.jobs.queue import Job
from app.services.ops import metrics
from app.services.ops.usage import record_usage
from app.services.runtime import Elephant


def run_extraction(elephant: Elephant, conn: Connection, job: Job) -> int:
    """Returns the number of new facts stored."""
    payload = job.payload
    if "memory_id" in payload:
        source = _note_source(elephant, conn, job.tenant_id, payload)
    else:
        source = _conversation_source(conn, job.tenant_id, payload)
    if source is None:
        return 0  # the memory or conversation was deleted meanwhile
    facts = [
        _storable(fact, source)
        for fact in _extract(elephant, conn, job.tenant_id, source.turns, source.anchor)
    ]
    if not facts:
        _check_source(elephant, conn, job, source)
        mentions.link_memories(conn, job.tenant_id, source.linked)
        return 0
    with metrics.embedding("document", len(facts)):
        vectors = elephant.embedder.embed_documents([fact.text for fact in facts])
    rows = []
    for fact, vector in zip(facts, vectors, strict=True):
        rows.append(
            (
                job.tenant_id,
                source.memory_of(fact),
                source.conversation_id,
                source.caller_ids(fact),
                fact.subject,
                fact.text,
                vector,
                fact.fact_type,
                fact.confidence,
                json.dumps([entity.model_dump() for entity in fact.entities]),
                fact.valid_from,
                _valid_to(fact),
                content_hash(fact.text),
                source.name,
                json.dumps(_metadata(fact)),
            )
        )
    _check_source(elephant, conn, job, source)  # at write time: SourceGone if deleted
    stored: list[contradictions.StoredFact] = []
    new_facts: list[tuple[str, ExtractedFact]] = []
    with conn.cursor() as cursor:
        # One pipelined batch; a statement the tenant already knows inserts nothing.
        cursor.executemany(
            load_sql("facts/insert_fact.sql"),
            rows,
            returning=True,
        )
        for fact, vector in zip(facts, vectors, strict=True):
            row = cursor.fetchone()
            if row is not None:
                new_facts.append((str(row[0]), fact))
                stored.append(
                    contradictions.StoredFact(
                        str(row[0]), fact.text, fact.subject, fact.valid_from, vector
                    )
                )
            cursor.nextset()
    contradictions.check(elephant, conn, job.tenant_id, stored)
    linking.link_facts(elephant, conn, job.tenant_id, new_facts)
    mentions.link_memories(conn, job.tenant_id, source.linked)
    return len(stored)


def _check_source(elephant: Elephant, conn: Connection, job: Job, source: _Source) -> None:
    """Lock the source against deletes until the job commits and read it again
    (app/services/jobs/sources.py): SourceGone when a delete, a store put or an erasure
    ended since it was read. A span some of whose turns an erasure took is extracted
    again, from the turns that remain, by a new job."""
    if source.conversation_id is None:
        sources.hold_note(conn, job.tenant_id, source.memory_for["*"])
        return
    sources.hold_tenant(conn, job.tenant_id)
    span = {
        "tenant": job.tenant_id,
        "conversation": source.conversation_id,
        "from": job.payload["seq_from"],
        "to": job.payload["seq_to"],
    }
    now = tuple(
        (int(seq), str(text))
        for seq, text in conn.execute(load_sql("facts/hold_span_turns.sql"), span).fetchall()
    )
    windows = {str(row[0]) for row in conn.execute(load_sql("facts/hold_span_windows.sql"), span)}
    if now == source.span and windows.issuperset(source.memory_ids):
        return
    if not now:
        raise sources.SourceGone("the conversation's turns were erased while the job ran")
    again = queue.enqueue(conn, job.tenant_id, job.kind, job.payload, max_attempts=job.max_attempts)
    raise sources.SourceGone(
        f"turns of the span were erased while the job ran: job {again} extracts what remains"
    )


def _storable(fact: ExtractedFact, source: _Source) -> ExtractedFact:
    """The fact with dates Python can read back (see dates.storable) and only the turn
    handles this job showed the extractor (an LLM may invent others)."""
    return fact.model_copy(
        update={
            "valid_from": storable(fact.valid_from),
            "valid_to": storable(fact.valid_to),
            "source_turn_ids": [t for t in fact.source_turn_ids if t in source.handles],
        }
    )


def _metadata(fact: ExtractedFact) -> dict[str, str]:
    """The facts row's metadata: who said it, when that was an assistant."""
    return {"said_by": "assistant"} if fact.said_by_assistant else {}


def _valid_to(fact: ExtractedFact) -> datetime | None:
    if (
        fact.valid_to is not None
        and fact.valid_from is not None
        and fact.valid_to < fact.valid_from
    ):
        return None
    return fact.valid_to


def _extract(
    elephant: Elephant,
    conn: Connection,
    tenant: str,
    turns: list[TurnInput],
    anchor: datetime | None,
) -> list[ExtractedFact]:
    """The extractor's facts, then the standing preferences and instructions (rules)."""
    settings = elephant.settings.facts
    standing = standing_facts(turns, settings.assistant_speakers)
    llm = elephant.llm
    if llm is None:
        return (
            extract_offline(
                turns,
                anchor,
                assistant_speakers=settings.assistant_speakers,
                from_assistant=settings.from_assistant,
            )
            + standing
        )
    result = llm.complete_json(  # LLMError propagates: the worker retries the job
        system=extract_prompt.SYSTEM,
        prompt=extract_prompt.build_prompt(turns, anchor),
        schema=extract_prompt.FactsResponse,
        max_tokens=4096,
    )
    record_usage(conn, tenant, "extract_facts", result.usage, ok=True)
    facts = [extract_prompt.to_extracted(fact) for fact in result.value.facts]
    return _by_assistant(facts, turns, settings) + standing


def _by_assistant(
    facts: list[ExtractedFact], turns: list[TurnInput], settings: FactsSettings
) -> list[ExtractedFact]:
    """The LLM's facts with those that cite only assistant turns marked as the assistant's
    (confidence at most ASSISTANT_CONFIDENCE), or dropped without facts.from_assistant."""
    assistants = Assistants.named(settings.assistant_speakers)
    speaker_of = {turn.turn_id: turn.speaker for turn in turns if turn.turn_id}
    marked = []
    for fact in facts:
        cited = [speaker_of[t] for t in fact.source_turn_ids if t in speaker_of]
        if not cited or not all(assistants.said(speaker) for speaker in cited):
            marked.append(fact)
        elif settings.from_assistant:
            confidence = min(fact.confidence, ASSISTANT_CONFIDENCE)
            update = {"said_by_assistant": True, "confidence": confidence}
            marked.append(fact.model_copy(update=update))
    return marked


@dataclass(frozen=True)
class _Source:
    """What one job extracts from, and how its facts map back to turns and memories.

    Every turn is shown to the extractor under a handle: the caller's turn id, or
    ``#<seq>`` for a turn without one (so facts can still be traced to their window).
    Handles of the second kind are never stored as source turn ids.
    """

    turns: list[TurnInput]  # turn_id = the handle; a note has none
    anchor: datetime | None  # the session date (or the note's date)
    memory_for: dict[str, str]  # handle -> memory id; "*" for a note
    caller_id: dict[str, str]  # handle -> the caller's turn id, for turns that had one
    conversation_id: str | None
    name: str  # the memory's source
    span: tuple[tuple[int, str], ...] = ()  # a conversation's (seq, text), as read
    windows: tuple[str, ...] = ()  # every window overlapping a conversation's span

    @property
    def linked(self) -> list[str]:
        """The memories whose entity links this job (re)writes: the note, or every window
        holding a turn of the span."""
        return sorted(set(self.memory_for.values()) | set(self.windows))

    @property
    def memory_ids(self) -> list[str]:
        return sorted(set(self.memory_for.values()))

    @property
    def handles(self) -> set[str]:
        return {turn.turn_id for turn in self.turns if turn.turn_id is not None}

    def memory_of(self, fact: ExtractedFact) -> str | None:
        return next(
            (self.memory_for[t] for t in fact.source_turn_ids if t in self.memory_for),
            self.memory_for.get("*"),
        )

    def caller_ids(self, fact: ExtractedFact) -> list[str]:
        return [self.caller_id[t] for t in fact.source_turn_ids if t in self.caller_id]


def _note_source(
    elephant: Elephant, conn: Connection, tenant: str, payload: JSONObject
) -> _Source | None:
    memory_id = str(payload["memory_id"])
    row = conn.execute(
        load_sql("facts/note_source.sql"), {"tenant": tenant, "memory": memory_id}
    ).fetchone()
    if row is None:
        return None
    text, when, source = row
    # jobs queued before notes had a subject: the tenant's owner now
    author = payload.get("subject") or tenant_owner(conn, elephant, tenant).owner
    turn = TurnInput(None, text, when, None, author=str(author))
    return _Source([turn], when, {"*": memory_id}, {}, None, source)


def _handle(seq: int, taken: set[str]) -> str:
    """``#<seq>``, made unique should a caller have used that as a turn id."""
    handle = f"#{seq}"
    while handle in taken:
        handle += "'"
    return handle


def _conversation_source(conn: Connection, tenant: str, payload: JSONObject) -> _Source | None:
    conversation_id = str(payload["conversation_id"])
    conversation = conn.execute(
        "SELECT source FROM conversations WHERE tenant_id = %s AND id = %s",
        (tenant, conversation_id),
    ).fetchone()
    if conversation is None:
        return None
    span = {
        "tenant": tenant,
        "conversation": conversation_id,
        "from": payload["seq_from"],
        "to": payload["seq_to"],
    }
    # occurred_at is the turn's timestamp, else its session date (set at commit)
    rows = conn.execute(load_sql("facts/span_turns.sql"), span).fetchall()
    if not rows:
        return None
    windows = conn.execute(load_sql("facts/span_windows.sql"), span).fetchall()
    turns = []
    memory_for: dict[str, str] = {}
    caller_id: dict[str, str] = {}
    taken = {str(row[4]) for row in rows if row[4]}
    for seq, speaker, text, when, source_turn_id in rows:
        handle = source_turn_id or _handle(seq, taken)
        taken.add(handle)
        turns.append(TurnInput(speaker, text, when, handle))
        if source_turn_id:
            caller_id[handle] = source_turn_id
        window = next((w for w in windows if w[1] <= seq <= w[2]), None)
        if window is not None:
            memory_for[handle] = str(window[0])
    anchor_text = payload.get("session_date")
    anchor = datetime.fromisoformat(anchor_text) if anchor_text else None
    span_read = tuple((int(row[0]), str(row[2])) for row in rows)
    return _Source(
        turns,
        anchor,
        memory_for,
        caller_id,
        conversation_id,
        str(conversation[0]),
        span_read,
        tuple(str(w[0]) for w in windows),
    )
