"""The shapes fact extraction works with, shared by the LLM and offline extractors."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ExtractedType = Literal["world", "experience", "inference"]  # what an extractor may say
# plus standing preferences and instructions, found by rules (facts/standing.py)
FactType = Literal["world", "experience", "inference", "preference"]


@dataclass(frozen=True)
class TurnInput:
    """One utterance to extract from. A note is a single turn with speaker None.

    A note's author is who "I" and "my" in it are (the note's subject, else the
    tenant's owner); unlike a speaker, an author is not a conversation partner, so
    a note's other sentences are not reported as something the author said.
    """

    speaker: str | None
    text: str
    timestamp: datetime | None = None
    turn_id: str | None = None  # caller's id of the turn, e.g. LoCoMo's "D1:3"
    author: str | None = None  # notes only


class EntityRef(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1, max_length=200)
    type: str = Field("thing", max_length=40)


class ExtractedFact(BaseModel):
    """One atomic statement, ready to embed and store."""

    model_config = ConfigDict(frozen=True)

    text: str = Field(min_length=1, max_length=2000)
    subject: str | None = Field(None, max_length=200)
    entities: list[EntityRef] = Field(default_factory=list)
    fact_type: FactType = "world"
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    confidence: float = Field(0.8, ge=0, le=1)
    source_turn_ids: list[str] = Field(default_factory=list)
    # an assistant's words (its turn's speaker is in facts.assistant_speakers): lower
    # trust, stored as metadata {"said_by": "assistant"}
    said_by_assistant: bool = False


@dataclass(frozen=True)
class Assistants:
    """The speaker names that are an assistant's (facts.assistant_speakers): any case, outer
    spaces ignored. Shared by the extractors and the standing-preference rules."""

    names: frozenset[str]

    @classmethod
    def named(cls, speakers: Collection[str]) -> Assistants:
        return cls(frozenset(name.strip().lower() for name in speakers) - {""})

    def said(self, speaker: str | None) -> bool:
        return (speaker or "").strip().lower() in self.names
