"""Who is calling: API keys turned into a principal bound to a tenant and scopes.

A key looks like ``ek_<prefix>_<secret>``; the database keeps the prefix (to
find it) and the SHA-256 of the whole key (to check it), never the key. The
app role cannot read ``api_keys``: ``elephant_verify_key(prefix, hash, client)``
compares the hashes inside the database and returns a key's reach only to a caller
holding its secret (never the hash, nothing of other keys). Keys are 256 random
bits, so a fast hash is enough (and a guesser controls no bit of the hash compared).

Scopes are independent: ``read`` (search, reflect, stats, graph reads),
``write`` (commit, feedback, graph writes, sessions), ``admin`` (thresholds,
jobs, deletes, erasure, keys, audit). A key of one tenant acts only for it;
an admin key created for every tenant (tenant NULL) names one per request.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from app.config import Settings, validate_tenant_id
from app.db.resources import load_sql
from app.db.runtime import Database
from app.errors import ConfigError, Forbidden, InvalidInput, Unauthorized
from app.protocol import TENANT_HEADER

Scope = Literal["read", "write", "admin"]
SCOPES: tuple[Scope, ...] = ("read", "write", "admin")
KEY_PATTERN = re.compile(r"^ek_([a-z0-9]{8,32})_([A-Za-z0-9_-]{32,128})$")
# The one message for every unknown or malformed key: nothing tells a guesser more.
INVALID_KEY = (
    "invalid API key: send 'Authorization: Bearer ek_...' with a key from `elephant keys create`"
)


@dataclass(frozen=True)
class Principal:
    """The caller of one request: a key (or the keyless local mode) with its reach."""

    name: str
    scopes: frozenset[str]
    tenant: str | None  # None: every tenant (an admin key for all, or local mode)
    prefix: str | None = None  # None in local mode
    key_id: str | None = field(default=None, compare=False)

    def has(self, scope: str) -> bool:
        return scope in self.scopes

    def require(self, scope: str) -> None:
        if not self.has(scope):
            raise Forbidden(
                f"this API key lacks the '{scope}' scope (it has: {', '.join(sorted(self.scopes))})"
            )

    def tenant_for(self, requested: str | None, default: str) -> str:
        """The tenant of a request: the key's own, or (all-tenant keys) the one named."""
        if requested is not None:
            try:
                validate_tenant_id(requested)
            except ValueError as exc:
                raise InvalidInput(f"{TENANT_HEADER}: {exc}") from None
        if self.tenant is None:
            return requested or default
        if requested is not None and requested != self.tenant:
            raise Forbidden(f"this API key may not act for tenant {requested!r}")
        return self.tenant


LOCAL = Principal(name="local", scopes=frozenset(SCOPES), tenant=None)


def secret_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def authenticate(db: Database, key: str | None, client: str | None = None) -> Principal:
    """The principal of a presented key, or Unauthorized (missing, unknown, revoked, expired)."""
    if not key:
        raise Unauthorized("an API key is required: send 'Authorization: Bearer <key>'")
    match = KEY_PATTERN.match(key)
    if match is None:
        raise Unauthorized(INVALID_KEY)
    with db.connection() as conn:
        row = conn.execute(
            load_sql("access/verify_key.sql"), (match.group(1), secret_hash(key), client)
        ).fetchone()
    if row is None:
        raise Unauthorized(INVALID_KEY)
    key_id, name, tenant, scopes, expires_at, revoked_at = row
    if revoked_at is not None:
        raise Unauthorized("this API key was revoked")
    if expires_at is not None and expires_at <= datetime.now(UTC):
        raise Unauthorized("this API key has expired")
    return Principal(
        name=name,
        scopes=frozenset(scopes),
        tenant=tenant,
        prefix=match.group(1),
        key_id=str(key_id),
    )


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(settings: Settings, host: str, *, where: str) -> None:
    """Keyless (auth.mode local) serving is for loopback only; refuse anything else."""
    if settings.auth.mode == "local" and not is_loopback(host):
        raise ConfigError(
            f"{where} would serve without API keys (auth.mode = local) on {host}, which is not "
            "a loopback address. Use auth.mode = keys (the default; ELEPHANT_AUTH_MODE=keys), "
            "create a key with `elephant keys create --tenant T --scopes read,write` and send it "
            "as 'Authorization: Bearer <key>', or bind 127.0.0.1."
        )
