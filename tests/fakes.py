"""The only fake allowed: an LLM at the network boundary, answering from a script.

Each answer is a dict (validated against the schema the caller asks for) or an
LLMError to raise. Calls are recorded so tests can inspect the prompts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from app.providers.llm import LLMError, LLMResult, LLMUsage

T = TypeVar("T", bound=BaseModel)
Answer = dict[str, Any] | LLMError | Callable[[str, str], dict[str, Any]]


@dataclass
class ScriptedLLM:
    """answers: schema class name -> list of answers, used in order (the last one repeats)."""

    answers: dict[str, list[Answer]] = field(default_factory=dict)
    provider: str = "scripted"
    model: str = "fake-1"
    calls: list[tuple[str, str, str]] = field(default_factory=list)

    def complete_json(
        self, *, system: str, prompt: str, schema: type[T], max_tokens: int = 1024
    ) -> LLMResult[T]:
        self.calls.append((schema.__name__, system, prompt))
        queue = self.answers.get(schema.__name__)
        if not queue:
            raise LLMError(f"scripted LLM has no answer for {schema.__name__}")
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        usage = LLMUsage(self.provider, self.model, len(prompt) // 4, 20, 1.0, 1)
        if isinstance(answer, LLMError):
            raise LLMError(answer.message, usage=usage)
        data = answer(system, prompt) if callable(answer) else answer
        return LLMResult(schema.model_validate(data), usage)
