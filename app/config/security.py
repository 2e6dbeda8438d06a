"""Who may call, as which tenant: API-key auth, rate limits, tenants and the console.

``auth`` chooses between API keys and keyless local mode and sets the per-key rate
limits; ``tenant`` names the default tenant and its owner; ``console`` governs the
web console's sign-in session.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Literal

from pydantic import Field, field_validator

from app.config.base import _Section, _split_list, validate_tenant_id


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
        description="Wrong secrets per minute per client address and key prefix before 429 "
        "(REST, MCP over HTTP and console sign-ins count together); from one address, failed "
        "lookups of keys not yet seen to verify, and wrong secrets across prefixes, may each "
        "reach 10 times this. The right secret of a key that has verified in this process is "
        "never refused (0 = no limit).",
    )
    trusted_proxies: tuple[str, ...] = Field(
        ("127.0.0.1", "::1"),
        description="Addresses or networks (CIDR, comma-separated in the env) of your reverse "
        "proxies: only from these is X-Forwarded-For read (its right-most address that is not "
        "one of them is the client's, for the failed-auth budgets, the audit log and the "
        "console) and X-Forwarded-Proto. Empty: the peer is always the client.",
    )

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _networks(cls, value: Any) -> Any:
        value = _split_list(value)
        return tuple(map(_network, value)) if isinstance(value, tuple) else value


def _network(entry: str) -> str:
    """An address or CIDR network in its canonical spelling (10.0.0.5/8 is 10.0.0.0/8)."""
    try:
        if "/" in entry:
            return str(ipaddress.ip_network(entry, strict=False))
        return str(ipaddress.ip_address(entry))
    except ValueError:
        raise ValueError(
            f"{entry!r} is not an IP address or network (e.g. 10.0.0.5, 10.0.0.0/8)"
        ) from None


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
