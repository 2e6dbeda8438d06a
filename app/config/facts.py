"""What is learnt from what is written: facts, contradictions and the knowledge graph.

``facts`` says whose turns are an assistant's and whether their facts count;
``contradiction`` bounds the comparison of a new fact with the subject's active ones;
``graph`` turns the knowledge-graph features on and picks AGE or ordinary tables.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from app.config.base import _Section, _split_list

DEFAULT_ASSISTANT_SPEAKERS = ("assistant", "ai", "bot", "system", "chatgpt", "claude", "gpt")


class FactsSettings(_Section):
    """Fact extraction at ingest (the LLM's or the offline rules')."""

    assistant_speakers: tuple[str, ...] = Field(
        DEFAULT_ASSISTANT_SPEAKERS,
        description="Speaker names (any case; comma-separated in the env) whose turns are an "
        "assistant's: their facts are marked said_by assistant (metadata) and get at most 0.5 "
        "confidence.",
    )
    from_assistant: bool = Field(
        True, description="Extract facts from assistant turns at all (false: only from the others)."
    )

    @field_validator("assistant_speakers", mode="before")
    @classmethod
    def _speakers(cls, value: Any) -> Any:
        return _split_list(value)


class ContradictionSettings(_Section):
    candidates: int = Field(
        5, ge=1, le=50, description="Most similar active facts of the subject compared."
    )
    min_similarity: float = Field(
        0.35, ge=0, le=1, description="Cosine below which facts are not compared."
    )


class GraphSettings(_Section):
    enabled: bool = Field(
        True, description="Knowledge-graph features (AGE or relational: see graph.backend)."
    )
    domains: tuple[str, ...] = Field(
        (
            "software", "music", "history", "philosophy", "health", "writing", "neuro",
            "finance", "personal", "general",
        ),
        min_length=1,
        description="Subject domains an entity may belong to (comma-separated in the env).",
    )  # fmt: skip
    backend: Literal["auto", "age", "relational"] = Field(
        "auto",
        description="Where the graph lives: Apache AGE, or ordinary tables (relational, for "
        "Postgres services without AGE). auto: AGE when the server has it, else relational.",
    )
    link_ingest: bool = Field(
        True, description="Upsert the entities of extracted facts and link them (mentions)."
    )
    max_items: int = Field(
        2000, ge=1, le=100000, description="Most entities, relations or observations per call."
    )

    @field_validator("domains", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        return _split_list(value)
