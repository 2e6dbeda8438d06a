"""The bearer token of an ``Authorization`` header (API keys, the CLI's link token)."""

from __future__ import annotations


def bearer_token(authorization: str | None) -> str | None:
    """The token of ``Authorization: Bearer <token>``; None for no header, another scheme
    or an empty token."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()
