"""Who may call, as which tenant: API-key auth, rate limits, tenants and the console.

``auth`` chooses between API keys and keyless local mode and sets the per-key rate
limits; ``tenant`` names the default tenant and its owner; ``console`` governs the
web console's sign-in session.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from app.config.base import _Section, validate_tenant_id


class AuthSettings(_Section):
    mode: Literal["keys", "local"] = Field(
        "keys",
        description="keys: every REST and MCP-over-HTTP request needs an API key (`elephant keys "
        "create`). local: no keys, only on a loopback address (single-user development).",
    )
    rate_read_per_minute: int = Field(
        1200, ge=0, description="Requests per minute per key for read endpoints (0 = no limit)."
    )
    rate_write_per_minute: int = Field(
        600, ge=0, description="Requests per minute per key for write endpoints (0 = no limit)."
    )
    rate_admin_per_minute: int = Field(
        60, ge=0, description="Requests per minute per key for admin endpoints (0 = no limit)."
    )
    rate_denied_per_minute: int = Field(
        30,
        ge=0,
        description="Failed key checks per minute per client address and presented key prefix "
        "before 429 (REST and MCP over HTTP count together; console sign-ins per address); "
        "from one address, failures of keys not yet seen to verify may reach 10 times this "
        "(0 = no limit).",
    )


class TenantSettings(_Section):
    default: str = Field("default", description="Tenant used when a request names none.")
    owner: str = Field(
        "user",
        min_length=1,
        max_length=200,
        description='Who "I" and "my" in a note are when neither the note (subject) nor the '
        "tenant (PUT /tenant/owner) names them.",
    )

    @field_validator("default")
    @classmethod
    def _tenant_id(cls, value: str) -> str:
        return validate_tenant_id(value)

    @field_validator("owner")
    @classmethod
    def _owner_name(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name someone (e.g. user, or the person's name)")
        return value.strip()


class ConsoleSettings(_Section):
    """The web console at /ui (app/console): what the agent remembers, in a browser."""

    enabled: bool = Field(True, description="Serve the web console at /ui.")
    session_hours: float = Field(
        12.0,
        ge=0.02,
        le=720,
        description="How long a console sign-in lasts (signing out, or revoking the key, ends "
        "it sooner).",
    )
    secure_cookie: Literal["auto", "always", "never"] = Field(
        "auto",
        description="Mark the session cookie Secure (sent over HTTPS only): auto does so when "
        "the request came over HTTPS (a TLS proxy must pass the scheme on).",
    )
