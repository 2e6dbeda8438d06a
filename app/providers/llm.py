"""The LLM protocol: one call that returns JSON validated against a pydantic model.

Implementations: anthropic and ollama (see build_llm). The ``offline`` provider is
not an LLM: with it build_llm returns None and the services use their
deterministic heuristics instead. Providers never touch the database; callers
record ``LLMUsage`` in the llm_usage table.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from app.config import LLMSettings
from app.errors import ConfigError, ElephantError, describe_validation
from app.protocol import JSONObject

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class LLMUsage:
    provider: str
    model: str
    tokens_in: int
    tokens_out: int
    latency_ms: float
    attempts: int


@dataclass(frozen=True)
class LLMResult(Generic[T]):
    value: T
    usage: LLMUsage


class LLMError(ElephantError, status_code=503, code="llm_unavailable"):
    """The LLM could not be reached, timed out, or never produced valid output."""

    def __init__(self, message: str, *, usage: LLMUsage | None = None) -> None:
        super().__init__(message)
        self.usage = usage


class LLM(Protocol):
    provider: str
    model: str

    def complete_json(
        self, *, system: str, prompt: str, schema: type[T], max_tokens: int = 1024
    ) -> LLMResult[T]:
        """Ask for JSON matching ``schema``; retry on invalid output; raise LLMError."""
        ...


# ---------------------------------------------------------------- shared machinery

_JSON_INSTRUCTIONS = """\
Reply with ONLY one JSON object that matches the JSON schema below: no prose before or \
after it, no markdown fences, no keys the schema does not define.
JSON schema:
{schema}"""

_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()
_MAX_FEEDBACK_CHARS = 1500


def json_instructions(schema: type[BaseModel]) -> str:
    """The output contract appended to every system prompt, so each provider asks alike."""
    return _JSON_INSTRUCTIONS.format(schema=json.dumps(schema.model_json_schema()))


def extract_json_object(text: str) -> JSONObject:
    """The first JSON object in ``text``.

    Models wrap JSON in ```json fences or add a sentence around it despite being
    told not to; accepting that is cheaper than a retry. Raises ValueError when
    no object can be decoded.
    """
    candidates = [match.group(1) for match in _FENCE.finditer(text)]
    candidates.append(text)
    for candidate in candidates:
        start = candidate.find("{")
        while start != -1:
            try:
                value, _ = _DECODER.raw_decode(candidate, start)
            except json.JSONDecodeError:
                start = candidate.find("{", start + 1)
                continue
            if isinstance(value, dict):
                return value
            start = candidate.find("{", start + 1)
    raise ValueError("the answer contains no JSON object")


@dataclass(frozen=True)
class _Reply:
    text: str
    tokens_in: int
    tokens_out: int
    truncated: bool


@dataclass(frozen=True)
class _Ask:
    """One call to a provider: the system prompt, the conversation so far (the retries'
    feedback included), the schema the answer must match, and the token budget."""

    system: str
    messages: list[dict[str, str]]
    schema: type[BaseModel]
    max_tokens: int


class _CallFailed(Exception):
    """A provider call failed for a transport/API reason; becomes LLMError with usage."""


class _JSONChat:
    """The provider-independent loop: ask, parse, validate, feed the error back, retry."""

    provider: str
    model: str

    def __init__(self, *, model: str, max_retries: int) -> None:
        self.model = model
        self.max_retries = max_retries

    def _send(self, ask: _Ask) -> _Reply:
        raise NotImplementedError

    def complete_json(
        self, *, system: str, prompt: str, schema: type[T], max_tokens: int = 1024
    ) -> LLMResult[T]:
        """Ask for JSON matching ``schema``; retry on invalid output; raise LLMError."""
        full_system = f"{system.rstrip()}\n\n{json_instructions(schema)}"
        messages: list[dict[str, str]] = [{"role": "user", "content": prompt}]
        tokens_in = tokens_out = attempts = 0
        latency_ms = 0.0
        problem = ""

        def usage() -> LLMUsage:
            return LLMUsage(
                provider=self.provider,
                model=self.model,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                latency_ms=latency_ms,
                attempts=attempts,
            )

        for _ in range(1 + self.max_retries):
            attempts += 1
            started = time.perf_counter()
            try:
                reply = self._send(_Ask(full_system, messages, schema, max_tokens))
            except _CallFailed as exc:
                latency_ms += (time.perf_counter() - started) * 1000
                raise LLMError(f"{self.provider} model {self.model}: {exc}", usage=usage()) from exc
            latency_ms += (time.perf_counter() - started) * 1000
            tokens_in += reply.tokens_in
            tokens_out += reply.tokens_out
            try:
                value = schema.model_validate(extract_json_object(reply.text))
            except ValidationError as exc:
                problem = f"the JSON does not match the schema: {describe_validation(exc)}"
            except ValueError as exc:
                problem = f"the answer is not valid JSON ({exc})"
            else:
                return LLMResult(value=value, usage=usage())
            if reply.truncated:
                problem += f" (the answer was cut off at max_tokens={max_tokens})"
            problem = problem[:_MAX_FEEDBACK_CHARS]
            messages.append({"role": "assistant", "content": reply.text.strip() or "(empty)"})
            messages.append(
                {
                    "role": "user",
                    "content": f"Your previous answer was rejected: {problem}. Reply again "
                    "with ONLY the corrected JSON object that matches the schema.",
                }
            )
        raise LLMError(
            f"{self.provider} model {self.model} gave no valid {schema.__name__} JSON "
            f"after {attempts} attempt(s): {problem}",
            usage=usage(),
        )


# ---------------------------------------------------------------- anthropic


class AnthropicLLM(_JSONChat):
    """Claude through the Messages API.

    The SDK's own retries are off (max_retries=0): a failed call surfaces at once
    as LLMError and the job queue decides when to try again. No temperature is
    sent: SDK 2.x speaks API version 2026-10-21, which rejects sampling
    parameters, so determinism rests on the prompt and the JSON contract.
    """

    provider: str = "anthropic"

    def __init__(self, settings: LLMSettings) -> None:
        if not settings.anthropic_api_key:
            raise ConfigError(
                "llm.provider is anthropic but no API key is configured: "
                "set ANTHROPIC_API_KEY or llm.anthropic_api_key"
            )
        super().__init__(model=settings.model, max_retries=settings.max_retries)
        self.timeout_s = settings.timeout_s
        self.base_url = settings.anthropic_base_url
        import anthropic  # imported with the provider: one-shot CLI commands never pay for it

        self._client = anthropic.Anthropic(
            api_key=settings.anthropic_api_key,
            base_url=settings.anthropic_base_url or None,
            timeout=settings.timeout_s,
            max_retries=0,
        )

    def close(self) -> None:
        self._client.close()

    def _send(self, ask: _Ask) -> _Reply:
        import anthropic
        from anthropic.types import (
            AssistantMessageParam,
            MessageParam,
            TextBlock,
            UserMessageParam,
        )

        params: list[MessageParam] = []
        for m in ask.messages:
            if m["role"] == "assistant":
                params.append(AssistantMessageParam(role="assistant", content=m["content"]))
            else:
                params.append(UserMessageParam(role="user", content=m["content"]))
        where = self.base_url or "the Anthropic API"
        try:
            message = self._client.messages.create(
                model=self.model, system=ask.system, messages=params, max_tokens=ask.max_tokens
            )
        except anthropic.AuthenticationError as exc:
            raise _CallFailed(
                f"authentication failed (HTTP {exc.status_code}); check ANTHROPIC_API_KEY"
            ) from exc
        except anthropic.APIStatusError as exc:
            raise _CallFailed(f"HTTP {exc.status_code} from {where}: {exc.message}") from exc
        except anthropic.APITimeoutError as exc:
            raise _CallFailed(f"no answer from {where} within {self.timeout_s}s") from exc
        except anthropic.APIConnectionError as exc:
            raise _CallFailed(f"cannot connect to {where}: {exc}") from exc
        except anthropic.AnthropicError as exc:
            raise _CallFailed(f"request failed: {exc}") from exc
        text = "".join(block.text for block in message.content if isinstance(block, TextBlock))
        return _Reply(
            text=text,
            tokens_in=message.usage.input_tokens,
            tokens_out=message.usage.output_tokens,
            truncated=message.stop_reason == "max_tokens",
        )


# ---------------------------------------------------------------- ollama


class OllamaLLM(_JSONChat):
    """A local model through Ollama's /api/chat, constrained by the schema (``format``)."""

    provider: str = "ollama"

    def __init__(self, settings: LLMSettings) -> None:
        super().__init__(model=settings.model, max_retries=settings.max_retries)
        self.url = settings.ollama_url
        self.timeout_s = settings.timeout_s
        import ollama  # imported with the provider, as anthropic

        self._client = ollama.Client(host=settings.ollama_url, timeout=settings.timeout_s)

    def close(self) -> None:
        self._client.close()  # type: ignore[no-untyped-call]

    def _send(self, ask: _Ask) -> _Reply:
        import ollama

        try:
            response = self._client.chat(
                model=self.model,
                messages=[{"role": "system", "content": ask.system}, *ask.messages],
                format=ask.schema.model_json_schema(),
                options={"temperature": 0, "num_predict": ask.max_tokens},
                stream=False,
            )
        except ollama.ResponseError as exc:
            hint = f" (run `ollama pull {self.model}`)" if exc.status_code == 404 else ""
            raise _CallFailed(
                f"HTTP {exc.status_code} from Ollama at {self.url}: {exc.error}{hint}"
            ) from exc
        except httpx.TimeoutException as exc:
            raise _CallFailed(
                f"no answer from Ollama at {self.url} within {self.timeout_s}s"
            ) from exc
        except (ConnectionError, httpx.HTTPError) as exc:
            raise _CallFailed(f"cannot reach Ollama at {self.url}: {exc}") from exc
        except (json.JSONDecodeError, ValidationError) as exc:
            raise _CallFailed(f"Ollama at {self.url} sent a malformed response: {exc}") from exc
        return _Reply(
            text=response.message.content or "",
            tokens_in=response.prompt_eval_count or 0,
            tokens_out=response.eval_count or 0,
            truncated=response.done_reason == "length",
        )


def build_llm(settings: LLMSettings) -> LLM | None:
    """The configured LLM, or None for ``offline`` (services then use heuristics)."""
    if settings.provider == "offline":
        return None
    if settings.provider == "anthropic":
        return AnthropicLLM(settings)
    return OllamaLLM(settings)
