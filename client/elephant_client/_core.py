"""What the sync and async clients share: configuration, the request, the retry rule,
and turning a response into a result or an exception. No I/O here."""

from __future__ import annotations

import json
import os
import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from uuid import UUID

import httpx

from elephant_client._errors import (
    ConnectionFailed,
    ElephantError,
    InvalidResponse,
    error_class,
)

__version__ = "0.1.0"

DEFAULT_URL = "http://127.0.0.1:7777"
URL_ENV = "ELEPHANT_URL"
KEY_ENV = "ELEPHANT_API_KEY"
TENANT_HEADER = "X-Elephant-Tenant"
REQUEST_ID_HEADER = "X-Request-Id"
USER_AGENT = f"elephant-client/{__version__} httpx/{httpx.__version__}"

RETRY_STATUSES = frozenset({429, 503})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard to try again after a 429, a 503 or a failed connection.

    ``attempts`` counts the first try (1: never retry). Without a Retry-After the wait is
    ``backoff_s * 2**n`` (n = retries so far), capped at ``max_backoff_s``, with up to
    25% jitter; a Retry-After is honoured as given, and one longer than ``max_wait_s``
    is not waited for: the error is raised at once with its ``retry_after``.
    """

    attempts: int = 3
    backoff_s: float = 0.5
    max_backoff_s: float = 8.0
    max_wait_s: float = 60.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("RetryPolicy.attempts counts the first try: it must be >= 1")
        if min(self.backoff_s, self.max_backoff_s, self.max_wait_s) < 0:
            raise ValueError("RetryPolicy waits must be >= 0")

    def delay(self, retry: int, retry_after: float | None) -> float | None:
        """Seconds to wait before retry number ``retry`` (0-based), or None: give up."""
        if retry + 1 >= self.attempts:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_wait_s else None
        base = min(self.backoff_s * 2.0**retry, self.max_backoff_s)
        return base * (1 + 0.25 * random.random())  # noqa: S311 (jitter, not a secret)


NO_RETRY = RetryPolicy(attempts=1)


@dataclass(frozen=True, slots=True)
class Config:
    base_url: str
    headers: dict[str, str]
    timeout: float | httpx.Timeout
    retry: RetryPolicy


def make_config(
    base_url: str | None,
    api_key: str | None,
    tenant: str | None,
    timeout: float | httpx.Timeout,
    retry: RetryPolicy | None,
    environ: Mapping[str, str] | None = None,
) -> Config:
    """Arguments first, then ELEPHANT_URL / ELEPHANT_API_KEY, then the defaults."""
    env = os.environ if environ is None else environ
    url = (base_url or env.get(URL_ENV) or DEFAULT_URL).rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"base_url must start with http:// or https:// (got {url!r})")
    key = api_key if api_key is not None else env.get(KEY_ENV) or None
    headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    if tenant:
        headers[TENANT_HEADER] = tenant
    return Config(url, headers, timeout, retry or RetryPolicy())


@dataclass(frozen=True, slots=True)
class Call:
    """One request as the clients send it. ``retry_safe``: may a 503 or a broken
    connection be retried (see ``retryable``)."""

    method: str
    path: str
    params: dict[str, Any] | None = None
    body: Any = None
    retry_safe: bool = True
    ok: frozenset[int] = frozenset()  # error statuses whose body is still the result

    def request(self, client: httpx.Client | httpx.AsyncClient) -> httpx.Request:
        content = None
        headers = {}
        if self.body is not None:
            content = json.dumps(self.body, default=_json_default).encode()
            headers["Content-Type"] = "application/json"
        return client.build_request(
            self.method, self.path, params=self.params, content=content, headers=headers
        )


def params(**values: Any) -> dict[str, Any]:
    """Query parameters without the unset (None) ones; bools as true/false, times as
    ISO 8601 (UTC as Z), as in a JSON body."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[name] = "true" if value else "false"
        elif isinstance(value, date):  # datetime too
            out[name] = _json_default(value)
        else:
            out[name] = value
    return out


def body(**values: Any) -> dict[str, Any]:
    """A JSON body without the unset (None) fields: the server's defaults apply."""
    return {name: value for name, value in values.items() if value is not None}


def retryable(call: Call, status: int | None, error: Exception | None = None) -> bool:
    """Whether this outcome may be retried.

    - 429 always: the rate limit is checked before the handler runs, nothing was done.
    - A connection that could not be opened always: the request never left.
    - 503 or a connection lost mid-request: only when the call is retry-safe (reads,
      PUT/DELETE, and POST /commit, whose exact dedup by content hash answers a repeat
      ``duplicate`` pointing at the memory the first attempt stored).
    """
    if status == 429:
        return True
    if error is not None:
        if isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout)):
            return True
        return call.retry_safe and isinstance(error, httpx.TransportError)
    return status == 503 and call.retry_safe


def retry_after(response: httpx.Response) -> float | None:
    """Retry-After in seconds (delta-seconds or an HTTP date), None when absent or bad."""
    raw = response.headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def error_from(response: httpx.Response) -> ElephantError:
    """The exception for an error response: the server's code, message and details."""
    status = response.status_code
    code = f"http_{status}"
    message = response.reason_phrase or f"HTTP {status}"
    details: dict[str, Any] = {}
    try:
        data = response.json()
    except ValueError:
        text = response.text.strip()
        if text:
            message = text[:500]
    else:
        if isinstance(data, dict):
            code = str(data.get("error") or code)
            message = str(data.get("message") or message)
            found = data.get("details")
            details = found if isinstance(found, dict) else {}
    return error_class(status)(
        message,
        status=status,
        code=code,
        details=details,
        request_id=response.headers.get(REQUEST_ID_HEADER),
        retry_after=retry_after(response),
    )


def connection_error(call: Call, exc: httpx.TransportError) -> ConnectionFailed:
    return ConnectionFailed(
        f"{call.method} {call.path}: {type(exc).__name__}: {exc}".rstrip(": "),
        code="connection_failed",
    )


def json_of(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        raise InvalidResponse(
            f"the server answered {response.status_code} with a body that is not JSON",
            status=response.status_code,
            request_id=response.headers.get(REQUEST_ID_HEADER),
        ) from None


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC)
            return value.isoformat().replace("+00:00", "Z")
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"cannot send {type(value).__name__} as JSON")
