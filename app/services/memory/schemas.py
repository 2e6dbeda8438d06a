"""What a commit takes and what it gives back: the inputs of /commit and
/commit_conversation (validated by pydantic, shared by the API, the MCP tools, the
CLI's ingest and session close) and their results.

The work itself (dedup, the gate, the INSERTs) is app/services/memory/commit.py; the
types live apart so a caller that only builds a request or reads a result does not
need the write path.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.services.common.inputs import Label, Metadata, Name, NonBlank, Real, ShortText, When
from app.services.gate.admit import GateVerdict

# ------------------------------------------------------------------ inputs


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class NoteIn(_Input):
    text: NonBlank = Field(description="The memory, verbatim.")
    source: Label = Field("api", description="Where it came from.")
    importance: Real | None = Field(None, ge=0, le=100, description="0-100; default 50.")
    metadata: Metadata = Field(default_factory=dict)
    occurred_at: When | None = Field(None, description="When it happened (the event date).")
    force: bool = Field(False, description="Store even if the gate would reject it (logged).")
    subject: Name | None = Field(
        None, description='Who "I" and "my" in the note are; default: the tenant\'s owner.'
    )


class TurnIn(_Input):
    speaker: Name
    text: NonBlank
    timestamp: When | None = None
    id: ShortText | None = Field(None, description="Caller's turn id, e.g. D1:3.")


class ConversationIn(_Input):
    turns: list[TurnIn] = Field(min_length=1)
    session_date: When | None = Field(None, description="Anchor for relative dates.")
    conversation_id: ShortText | None = None
    source: Label = "conversation"
    window_size: int = Field(5, ge=1, le=100)
    stride: int = Field(2, ge=1, le=100)
    metadata: Metadata = Field(default_factory=dict)
    force: bool = False

    @model_validator(mode="after")
    def _stride_within_window(self) -> ConversationIn:
        if self.stride > self.window_size:
            raise ValueError(
                f"stride ({self.stride}) must be between 1 and window_size ({self.window_size})"
            )
        return self


# ------------------------------------------------------------------ results


CommitStatus = Literal["stored", "duplicate", "rejected"]


@dataclass(frozen=True, slots=True)
class NoteResponse:
    """What /commit returns; ``facts`` and ``job_status`` once extraction ran (``wait``).

    One type serves the commit and its answer (it replaces an internal twin with the
    same fields): commit_note returns it with the gate's scores as computed, which its
    callers read (the MCP store tool rounds the composite to 2 places from them), and
    /commit answers with ``rounded()``, the scores to 3 decimals."""

    memory_id: str | None
    status: CommitStatus
    duplicate_of: str | None
    gate: GateVerdict
    job_id: int | None
    job_status: str | None
    facts: int | None

    def rounded(self) -> NoteResponse:
        """The answer /commit sends: the gate's numbers to 3 decimals."""
        return replace(self, gate=self.gate.rounded())


@dataclass(frozen=True, slots=True)
class WindowOutcome:
    """One window of a conversation: stored, a duplicate of ``memory_id``, or rejected."""

    memory_id: str | None
    turn_start: int
    turn_end: int
    status: CommitStatus
    composite: float | None
    reason: str


@dataclass(frozen=True, slots=True)
class WindowCounts:
    stored: int
    duplicate: int
    rejected: int


@dataclass(frozen=True, slots=True)
class WindowReport(WindowCounts):
    items: list[WindowOutcome]


@dataclass(frozen=True, slots=True)
class ConversationResponse:
    """What /commit_conversation returns; ``facts`` and ``job_statuses`` with ``wait``."""

    conversation_id: str
    turns: int
    windows: WindowReport
    job_ids: list[int]
    job_statuses: list[str] | None
    facts: int | None


@dataclass
class ConversationResult:
    """A conversation's commit as it is built up (windows, then jobs, then with ``wait``
    the facts); ``response()`` is what /commit_conversation sends, the windows counted."""

    conversation_id: str
    turns: int
    windows: list[WindowOutcome] = field(default_factory=list)
    job_ids: list[int] = field(default_factory=list)
    facts: int | None = None
    job_statuses: list[str] | None = None

    def window_counts(self) -> WindowCounts:
        decisions = [window.status for window in self.windows]
        return WindowCounts(
            stored=decisions.count("stored"),
            duplicate=decisions.count("duplicate"),
            rejected=decisions.count("rejected"),
        )

    def response(self) -> ConversationResponse:
        counts = self.window_counts()
        return ConversationResponse(
            conversation_id=self.conversation_id,
            turns=self.turns,
            windows=WindowReport(
                stored=counts.stored,
                duplicate=counts.duplicate,
                rejected=counts.rejected,
                items=self.windows,
            ),
            job_ids=self.job_ids,
            job_statuses=self.job_statuses,
            facts=self.facts,
        )
