"""The one error family of Elephant.

Services raise these; the API maps them to HTTP statuses and the MCP adapter to
tool errors, each in one place, so a message written here reaches every caller.
"""

from __future__ import annotations

from typing import Any


class ElephantError(Exception):
    """Base of every error Elephant raises on purpose."""

    status_code: int = 500
    code: str = "internal_error"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return body


class ConfigError(ElephantError):
    """A setting is missing, unknown or invalid; the message names the key."""

    code = "config_error"


class InvalidInput(ElephantError):
    """The caller sent something we cannot accept; the message says what to fix."""

    status_code = 422
    code = "invalid_input"


class Unauthorized(ElephantError):
    """No API key, or one that is unknown, revoked or expired."""

    status_code = 401
    code = "unauthorized"


class Forbidden(ElephantError):
    """The key is valid but may not do this (scope, tenant, origin)."""

    status_code = 403
    code = "forbidden"


class MisdirectedHost(ElephantError):
    """The Host header names a host this server does not answer to (DNS rebinding)."""

    status_code = 421
    code = "misdirected_host"


class UnsupportedMediaType(ElephantError):
    status_code = 415
    code = "unsupported_media_type"


class PayloadTooLarge(ElephantError):
    status_code = 413
    code = "payload_too_large"


class RateLimited(ElephantError):
    status_code = 429
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after_s: int) -> None:
        super().__init__(message, details={"retry_after_s": retry_after_s})
        self.retry_after_s = retry_after_s


class NotFound(ElephantError):
    status_code = 404
    code = "not_found"


class Conflict(ElephantError):
    status_code = 409
    code = "conflict"


class CapabilityMissing(ElephantError):
    """The database lacks an extension a feature needs (pgvector, AGE, ...)."""

    status_code = 503
    code = "capability_missing"


class DatabaseUnavailable(ElephantError):
    """The database cannot be reached or started."""

    status_code = 503
    code = "database_unavailable"

    def __init__(self, message: str, *, retry_after_s: int | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class SchemaMismatch(ElephantError):
    """The database schema or embedding dimension does not match this build/config."""

    status_code = 503
    code = "schema_mismatch"
