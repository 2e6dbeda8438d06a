"""What an erasure request may name, checked before anything is read: exactly one
target (a tenant, a subject with its aliases, a conversation, a source, or memory and
fact ids), names long enough to be a name, bounded lists, no NUL characters."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MAX_IDS = 1000
MAX_ALIASES = 20
NAME_MAX_CHARS = 200

Kind = Literal["tenant", "subject", "conversation", "source", "ids"]


def _clean(value: str, what: str) -> str:
    if "\x00" in value:
        raise ValueError(f"{what} must not contain NUL characters (\\x00)")
    if not value:
        raise ValueError(f"{what} must not be empty")
    return value


def _name(value: str, what: str) -> str:
    value = _clean(value.strip(), what)
    if len(value) < 2 or not any(ch.isalnum() for ch in value):
        raise ValueError(f"{what} must be a name of at least 2 characters with a letter or digit")
    if len(value) > NAME_MAX_CHARS:
        raise ValueError(f"{what} must be at most {NAME_MAX_CHARS} characters")
    return value


class EraseIn(BaseModel):
    """Exactly one target per request; ``dry_run`` reports without deleting."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    tenant: bool = Field(
        False, description="Erase the whole tenant: every row, its graph and its API keys."
    )
    subject: str | None = Field(
        None, description="A person or entity: everything naming them (whole word, any case)."
    )
    aliases: list[str] = Field(
        default_factory=list, description="Other names of the subject (at most 20)."
    )
    conversation_id: str | None = Field(
        None, max_length=200, description="A conversation: your id for it, or its uuid."
    )
    source: str | None = Field(
        None, max_length=100, description="Every memory, fact and conversation of this source."
    )
    memory_ids: list[UUID] = Field(default_factory=list, description="Memories to erase.")
    fact_ids: list[UUID] = Field(default_factory=list, description="Facts to erase.")
    dry_run: bool = Field(False, description="Report what would be removed; remove nothing.")

    @field_validator("subject")
    @classmethod
    def _subject(cls, value: str | None) -> str | None:
        return None if value is None else _name(value, "subject")

    @field_validator("aliases")
    @classmethod
    def _aliases(cls, values: list[str]) -> list[str]:
        if len(values) > MAX_ALIASES:
            raise ValueError(f"at most {MAX_ALIASES} aliases per request")
        return list(dict.fromkeys(_name(value, "each alias") for value in values))

    @field_validator("conversation_id", "source")
    @classmethod
    def _text(cls, value: str | None) -> str | None:
        return None if value is None else _clean(value, "the value")

    @model_validator(mode="after")
    def _one_target(self) -> EraseIn:
        given = [
            name
            for name, present in (
                ("tenant", self.tenant),
                ("subject", self.subject is not None),
                ("conversation_id", self.conversation_id is not None),
                ("source", self.source is not None),
                ("memory_ids/fact_ids", bool(self.memory_ids or self.fact_ids)),
            )
            if present
        ]
        if not given:
            raise ValueError(
                "name what to erase: one of tenant (true), subject, conversation_id, source, "
                "memory_ids/fact_ids"
            )
        if len(given) > 1:
            raise ValueError(f"erase one kind of target per request, not {' and '.join(given)}")
        if self.aliases and self.subject is None:
            raise ValueError("aliases need a subject")
        count = len(self.memory_ids) + len(self.fact_ids)
        if count > MAX_IDS:
            raise ValueError(f"{count} ids; at most {MAX_IDS} per request: split the erasure")
        return self

    @property
    def kind(self) -> Kind:
        if self.tenant:
            return "tenant"
        if self.subject is not None:
            return "subject"
        if self.conversation_id is not None:
            return "conversation"
        return "source" if self.source is not None else "ids"

    @property
    def names(self) -> list[str]:
        return [] if self.subject is None else list(dict.fromkeys([self.subject, *self.aliases]))
