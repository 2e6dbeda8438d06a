"""The language model: offline heuristics, Anthropic or Ollama.

Which provider and model answer the LLM calls (fact extraction, query variants,
reflect), the credentials and endpoint, and how long and how often a call is tried.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.config.base import _Section


class LLMSettings(_Section):
    provider: Literal["offline", "anthropic", "ollama"] = Field(
        "offline",
        description="offline = deterministic heuristics, no model; anthropic; ollama.",
    )
    model: str = Field(
        "claude-haiku-4-5", description="Model name (anthropic or ollama, e.g. llama3.1)."
    )
    anthropic_api_key: str | None = Field(
        None,
        description="Anthropic key; also read from ANTHROPIC_API_KEY.",
        json_schema_extra={"secret": True},
    )
    anthropic_base_url: str | None = Field(
        None, description="Anthropic API base URL (unset: the SDK default)."
    )
    ollama_url: str = Field("http://127.0.0.1:11434", description="Ollama server.")
    timeout_s: float = Field(30.0, gt=0, description="Seconds per LLM call.")
    max_retries: int = Field(
        1, ge=0, le=5, description="Extra attempts when the answer is not valid JSON/schema."
    )
