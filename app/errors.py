"""The one error family of Elephant, and the one way a validation error is told.

Services raise these; the API maps them to HTTP statuses, the MCP adapter to
tool errors and the CLI to a message, each in one place, so a message written
here reaches every caller. A pydantic ``ValidationError`` (a request model that
refused its input) becomes ``InvalidInput.from_validation``: every adapter, and
the LLM retry loop that shows a model what to fix, words it the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import ValidationError

from app.protocol import JSONObject

MAX_PROBLEMS = 10
"""Problems a message names; the rest are counted ('... and 3 more')."""


class ElephantError(Exception):
    """Base of every error Elephant raises on purpose."""

    status_code: int = 500
    code: str = "internal_error"

    def __init_subclass__(cls, *, status_code: int | None = None, code: str | None = None) -> None:
        """``class NotFound(ElephantError, status_code=404, code="not_found")``: the HTTP
        status and the error code every adapter reports, on the class line."""
        super().__init_subclass__()
        if status_code is not None:
            cls.status_code = status_code
        if code is not None:
            cls.code = code

    def __init__(self, message: str, *, details: JSONObject | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}

    def to_dict(self) -> JSONObject:
        body: JSONObject = {"error": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return body


class ConfigError(ElephantError, code="config_error"):
    """A setting is missing, unknown or invalid; the message names the key."""


class InvalidInput(ElephantError, status_code=422, code="invalid_input"):
    """The caller sent something we cannot accept; the message says what to fix."""

    @classmethod
    def from_validation(cls, exc: ValidationError) -> InvalidInput:
        """A request model's refusal: the message names each field and its problem
        (``turns[0].text: ...``), ``details.fields`` lists every one as {key, message}."""
        problems = problems_of(exc)
        fields = [{"key": problem.where, "message": problem.message} for problem in problems]
        return cls(describe_problems(problems), details={"fields": fields})


class Unauthorized(ElephantError, status_code=401, code="unauthorized"):
    """No API key, or one that is unknown, revoked or expired."""


class Forbidden(ElephantError, status_code=403, code="forbidden"):
    """The key is valid but may not do this (scope, tenant, origin)."""


class MisdirectedHost(ElephantError, status_code=421, code="misdirected_host"):
    """The Host header names a host this server does not answer to (DNS rebinding)."""


class UnsupportedMediaType(ElephantError, status_code=415, code="unsupported_media_type"):
    """The request body is not in a media type the endpoint reads."""


class PayloadTooLarge(ElephantError, status_code=413, code="payload_too_large"):
    """The request body, or an upload, is larger than the server accepts."""


class RateLimited(ElephantError, status_code=429, code="rate_limited"):
    """Too many requests; ``retry_after_s`` says when to try again."""

    def __init__(self, message: str, *, retry_after_s: int) -> None:
        super().__init__(message, details={"retry_after_s": retry_after_s})
        self.retry_after_s = retry_after_s


class NotFound(ElephantError, status_code=404, code="not_found"):
    """No such thing for this tenant (record, entity, session, key, ...)."""


class Conflict(ElephantError, status_code=409, code="conflict"):
    """The request clashes with what is stored or running now."""


class CapabilityMissing(ElephantError, status_code=503, code="capability_missing"):
    """The database lacks an extension a feature needs (pgvector, AGE, ...)."""


class DatabaseUnavailable(ElephantError, status_code=503, code="database_unavailable"):
    """The database cannot be reached or started."""

    def __init__(self, message: str, *, retry_after_s: int | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class SchemaMismatch(ElephantError, status_code=503, code="schema_mismatch"):
    """The database schema or embedding dimension does not match this build/config."""


def retry_headers(exc: ElephantError) -> dict[str, str]:
    """``Retry-After`` of an error that says when to try again (a rate limit, a database
    recovering), for every door's answers: the API, the console's pages, MCP over HTTP."""
    retry_after = getattr(exc, "retry_after_s", None)
    return {} if retry_after is None else {"Retry-After": str(retry_after)}


# ------------------------------------------------------------------ validation messages


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with an input: where (``turns[0].text``; empty for the input as a
    whole) and what."""

    where: str
    message: str


def problems_of(exc: ValidationError) -> list[Problem]:
    """Each error of ``exc``, its message without the 'Value error, ' pydantic puts before
    a validator's own words."""
    return [
        Problem(location(error["loc"]), str(error["msg"]).removeprefix("Value error, "))
        for error in exc.errors()
    ]


def describe_problems(problems: Sequence[Problem]) -> str:
    """'where: problem; ...' (a problem of the whole input: its message alone), at most
    MAX_PROBLEMS of them, then how many more."""
    shown = [
        f"{problem.where}: {problem.message}" if problem.where else problem.message
        for problem in problems[:MAX_PROBLEMS]
    ]
    if len(problems) > len(shown):
        shown.append(f"... and {len(problems) - len(shown)} more")
    return "; ".join(shown)


def describe_validation(exc: ValidationError) -> str:
    """The message of ``InvalidInput.from_validation(exc)``."""
    return describe_problems(problems_of(exc))


def location(loc: Sequence[int | str]) -> str:
    """A pydantic location as a path: list positions as [i] (``turns[0].text``)."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text
