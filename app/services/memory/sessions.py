"""Session lifecycle: close a session (store it, extract facts, write a handoff), fetch handoffs.

Closing a session runs, in order: the transcript through ``commit_conversation``
(its own transaction: turns kept losslessly, windows gated, extraction enqueued
or, with ``wait``, run now); then the handoff (decisions, open questions, next
steps, summary) from the LLM when one is configured, else from the rule-based
offline summariser; then one transaction writing the handoff and the LLM usage.
An LLM failure falls back to the offline handoff with a note: the transcript is
stored before the LLM is asked anything, so it is never lost.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import msgspec
from msgspec import UNSET, UnsetType
from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.db.resources import load_sql
from app.errors import InvalidInput, NotFound
from app.prompts import handoff as handoff_prompt
from app.providers.llm import LLMError, LLMUsage
from app.services.common.inputs import (
    Label,
    Metadata,
    NonBlank,
    ShortText,
    Text,
    When,
    require_text,
)
from app.services.common.jsonable import utc_text
from app.services.memory.commit import commit_conversation
from app.services.memory.schemas import ConversationIn, TurnIn, WindowCounts
from app.services.ops.usage import record_usage
from app.services.runtime import Elephant

DEFAULT_SPEAKER = "user"
PROJECT_MAX_CHARS = 200


# ------------------------------------------------------------------ inputs


class SessionCloseIn(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    project: NonBlank = Field(
        max_length=PROJECT_MAX_CHARS, description="The project the session was on."
    )
    transcript: Text | None = Field(
        None,
        description="The session as text; 'Speaker: text' lines become turns, otherwise one turn.",
    )
    turns: list[TurnIn] | None = Field(None, description="The session as turns (or transcript).")
    session_date: When | None = Field(None, description="When the session happened (now).")
    conversation_id: ShortText | None = Field(
        None, description="Appends to this conversation when it exists."
    )
    source: Label = "session"
    metadata: Metadata = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_body(self) -> SessionCloseIn:
        has_transcript = bool(self.transcript)
        has_turns = bool(self.turns)
        if has_transcript == has_turns:
            raise ValueError("give exactly one of transcript (non-empty text) or turns (a list)")
        return self


# ------------------------------------------------------------------ transcript → turns

# "Alice: text", "Dr. Who: text", "assistant: text"; at most three words before the colon.
_SPEAKER_LINE = re.compile(r"^\s*([A-Za-z][\w.'-]*(?: [A-Za-z][\w.'-]*){0,2})\s*:\s+(\S.*?)\s*$")
# Labels that look like a speaker but belong to the text.
_LABELS = frozenset(
    {
        "note",
        "notes",
        "todo",
        "fixme",
        "next",
        "next step",
        "next steps",
        "decision",
        "decisions",
        "question",
        "questions",
        "open question",
        "open questions",
        "summary",
        "warning",
        "error",
        "example",
        "update",
    }
)


def split_transcript(transcript: str, max_chars: int) -> list[TurnIn]:
    """'Speaker: text' lines start turns and other lines continue the current one; text
    with no such line is one turn by 'user'. A turn longer than max_chars is split at
    paragraphs (else hard), so a long session is never refused."""
    turns: list[tuple[str, list[str]]] = []
    for line in transcript.splitlines():
        match = _SPEAKER_LINE.match(line)
        if match and match.group(1).lower() not in _LABELS:
            turns.append((match.group(1), [match.group(2)]))
        elif turns:
            turns[-1][1].append(line)
        elif line.strip():
            turns.append((DEFAULT_SPEAKER, [line]))
    return [
        TurnIn(speaker=speaker, text=chunk)
        for speaker, lines in turns
        for chunk in _chunks("\n".join(lines).strip(), max_chars)
    ]


def _chunks(text: str, max_chars: int) -> list[str]:
    """The text, or pieces of it at paragraph (else hard) boundaries, each within max_chars."""
    if len(text) <= max_chars:
        return [text] if text else []
    pieces: list[str] = []
    current = ""
    for paragraph in re.split(r"\n\s*\n", text):
        while len(paragraph) > max_chars:
            if current:
                pieces.append(current)
                current = ""
            pieces.append(paragraph[:max_chars])
            paragraph = paragraph[max_chars:]
        joined = f"{current}\n\n{paragraph}" if current else paragraph
        if len(joined) > max_chars:
            pieces.append(current)
            current = paragraph
        else:
            current = joined
    pieces.append(current)
    return [piece.strip() for piece in pieces if piece.strip()]


# ------------------------------------------------------------------ the offline handoff

_BULLET = re.compile(r"^\s*(?:[-*•>]|\d+[.)])\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_DECISION = re.compile(
    r"\b(decided|decision|chose|chosen|opted (?:for|to)|settled on|agreed (?:on|to)|"
    r"will use|we'll use|going with|go with|switch(?:ed)? to)\b",
    re.IGNORECASE,
)
_QUESTION = re.compile(
    r"\b(open question|unresolved|unclear|not sure|tbd|unknown whether|to be decided)\b",
    re.IGNORECASE,
)
_NEXT = re.compile(
    r"\b(next|todo|to do|will|need to|needs to|have to|should|plan to|going to|follow up|"
    r"remaining)\b",
    re.IGNORECASE,
)
_COMMON_WORDS = (
    "a an and are as at be but by can could did do does for from had has have i if in into "
    "is it its just let me my no not of on or our so that the their then there these this to "
    "up was we were what when which who will with would you your yes ok okay also about should "
    "need next how why all some more one out get got use using been being they them than very "
    "sure thanks thank"
)
_STOPWORDS = frozenset(_COMMON_WORDS.split())


@dataclass
class HandoffDraft:
    summary: str
    decisions: list[str] = field(default_factory=list)
    open_questions: list[str] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)


def _sentences(text: str) -> list[str]:
    found: list[str] = []
    for line in text.splitlines():
        line = _BULLET.sub("", line).strip()
        found.extend(part.strip() for part in _SENTENCE_END.split(line) if part.strip())
    return found


def classify(sentence: str) -> str | None:
    """decision, question or next_step (first rule that matches, in that order), else None.

    A question mark wins over everything ('Should we go with Redis?' is open); 'decided',
    'chose', 'will use', ... mark decisions; 'open question', 'TBD', 'unclear' questions;
    'next', 'TODO', 'will', 'need to', 'should' next steps.
    """
    if sentence.rstrip().endswith("?"):
        return "question"
    if _DECISION.search(sentence):
        return "decision"
    if _QUESTION.search(sentence):
        return "question"
    if _NEXT.search(sentence):
        return "next_step"
    return None


def offline_handoff(project: str, turns: Sequence[TurnIn], when: datetime) -> HandoffDraft:
    """A deterministic handoff: classified sentences plus a short summary."""
    buckets: dict[str, list[str]] = {"decision": [], "question": [], "next_step": []}
    substantive: list[str] = []
    words: Counter[str] = Counter()
    for turn in turns:
        for sentence in _sentences(turn.text):
            kind = classify(sentence)
            if kind is not None:
                buckets[kind].append(sentence)
            if len(sentence.split()) >= 4:
                substantive.append(sentence)
            words.update(
                word
                for word in re.findall(r"[A-Za-z][\w-]{2,}", sentence.lower())
                if word not in _STOPWORDS
            )
    decisions = handoff_prompt.clip_items(buckets["decision"])
    questions = handoff_prompt.clip_items(buckets["question"])
    steps = handoff_prompt.clip_items(buckets["next_step"])
    speakers = list(dict.fromkeys(turn.speaker for turn in turns))
    parts = [
        f"Session on {project} ({when:%Y-%m-%d}): {len(turns)} turns"
        f" by {', '.join(speakers[:5])}{' and others' if len(speakers) > 5 else ''}."
    ]
    topics = [word for word, _ in words.most_common(6)]
    if topics:
        parts.append(f"Frequent terms: {', '.join(topics)}.")
    if substantive:
        parts.append(f"Started with: {_clip(substantive[0], 160)}")
        if len(substantive) > 1:
            parts.append(f"Ended with: {_clip(substantive[-1], 160)}")
    parts.append(
        f"Decisions: {len(decisions)}, open questions: {len(questions)}, next steps: {len(steps)}."
    )
    return HandoffDraft(" ".join(parts), decisions, questions, steps)


def _clip(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters that ends like a sentence."""
    text = " ".join(text.split())
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return text if text[-1] in ".!?…" else text + "."


# ------------------------------------------------------------------ results


@dataclass(frozen=True, slots=True)
class Handoff:
    """What the next session of the project needs; ``created_at`` is an ISO 8601 string."""

    id: int
    project: str
    created_at: str
    conversation_id: str | None
    summary: str
    decisions: list[str]
    open_questions: list[str]
    next_steps: list[str]
    generator: str


class SessionClosed(msgspec.Struct, frozen=True, kw_only=True):
    """The stored session and its handoff; ``note`` when the LLM failed and the handoff is
    the offline one."""

    project: str
    conversation_id: str
    turns: int
    windows: WindowCounts
    facts: int | None
    job_statuses: list[str] | None
    handoff: Handoff
    note: str | UnsetType = UNSET


# ------------------------------------------------------------------ close and fetch


def close_session(
    elephant: Elephant, tenant: str, request: SessionCloseIn, *, wait: bool = True
) -> SessionClosed:
    """Store the session, extract its facts (now with ``wait``), write and return the handoff."""
    settings = elephant.settings.commit
    turns = request.turns or split_transcript(request.transcript or "", settings.max_text_chars)
    when = request.session_date or datetime.now(UTC)
    stored = commit_conversation(
        elephant,
        tenant,
        ConversationIn(
            turns=turns,
            session_date=when,
            conversation_id=request.conversation_id,
            source=request.source,
            window_size=settings.window_size,
            stride=min(settings.stride, settings.window_size),
            metadata={**request.metadata, "project": request.project, "session": True},
        ),
        wait=wait,
    )
    draft, generator, usage, failure = _draft(elephant, request.project, turns, when)
    metadata = {"prompt_version": handoff_prompt.VERSION if usage else None, "turns": len(turns)}
    if failure:
        metadata["note"] = failure
    with elephant.db.tenant(tenant) as conn:
        if usage is not None:
            record_usage(conn, tenant, "handoff", usage, ok=failure is None, error=failure)
        row = conn.execute(
            load_sql("memory/insert_handoff.sql"),
            {
                "tenant": tenant,
                "project": request.project,
                "conversation": stored.conversation_id,
                "summary": draft.summary,
                "decisions": json.dumps(draft.decisions),
                "open_questions": json.dumps(draft.open_questions),
                "next_steps": json.dumps(draft.next_steps),
                "generator": generator,
                "metadata": json.dumps(metadata),
            },
        ).fetchone()
    assert row is not None
    return SessionClosed(
        project=request.project,
        conversation_id=stored.conversation_id,
        turns=stored.turns,
        windows=stored.window_counts(),
        facts=stored.facts,
        job_statuses=stored.job_statuses,
        handoff=Handoff(
            id=int(row[0]),
            project=request.project,
            created_at=utc_text(row[1]),
            conversation_id=stored.conversation_id,
            summary=draft.summary,
            decisions=draft.decisions,
            open_questions=draft.open_questions,
            next_steps=draft.next_steps,
            generator=generator,
        ),
        note=f"LLM unavailable ({failure}): wrote the offline handoff" if failure else UNSET,
    )


def _draft(
    elephant: Elephant, project: str, turns: Sequence[TurnIn], when: datetime
) -> tuple[HandoffDraft, str, LLMUsage | None, str | None]:
    """(handoff, generator, LLM usage to record, failure message)."""
    llm = elephant.llm
    if llm is None:
        return offline_handoff(project, turns, when), "offline", None, None
    try:
        reply = llm.complete_json(
            system=handoff_prompt.SYSTEM,
            prompt=handoff_prompt.build_prompt(project, [(t.speaker, t.text) for t in turns]),
            schema=handoff_prompt.Handoff,
            max_tokens=1200,
        )
    except LLMError as exc:
        draft = offline_handoff(project, turns, when)
        return draft, f"offline (fallback: {exc.message})"[:200], exc.usage, exc.message
    value = reply.value
    draft = HandoffDraft(
        value.summary.strip(), value.decisions, value.open_questions, value.next_steps
    )
    return draft, f"{llm.provider}:{llm.model}", reply.usage, None


def check_project(project: str) -> str:
    value = project.strip()
    require_text("project", value)
    if not 1 <= len(value) <= PROJECT_MAX_CHARS:
        raise InvalidInput(f"project: must be 1-{PROJECT_MAX_CHARS} characters")
    return value


def get_handoff(elephant: Elephant, tenant: str, project: str) -> Handoff:
    """The latest handoff of the project; NotFound when no session of it was closed."""
    project = check_project(project)
    with elephant.db.tenant(tenant) as conn:
        row = conn.execute(
            load_sql("memory/latest_handoff.sql"), {"tenant": tenant, "project": project}
        ).fetchone()
    if row is None:
        raise NotFound(
            f"no handoff for project {project!r} in this tenant: close a session of it first "
            "(close_session)"
        )
    return Handoff(
        id=int(row[0]),
        project=row[1],
        created_at=utc_text(row[2]),
        conversation_id=str(row[3]) if row[3] else None,
        summary=row[4],
        decisions=list(row[5]),
        open_questions=list(row[6]),
        next_steps=list(row[7]),
        generator=row[8],
    )
