"""Web console sign-in: an API key, checked once, turned into a revocable browser session.

The browser keeps a random token in an HttpOnly cookie; the database keeps its SHA-256
and the key it was opened with (migration 0011), so signing out, revoking the key or
its expiry ends the session, on every API process at once. The key itself is never
stored in the browser. The cookie and the CSRF token of the session's forms, what
travels over HTTP, are app/web/cookies.py.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime

from app.db.resources import load_sql
from app.db.runtime import Database
from app.errors import Forbidden, Unauthorized
from app.services.access.auth import INVALID_KEY, Principal, authenticate, secret_hash

TOKEN_BYTES = 32


@dataclass(frozen=True)
class ConsoleSession:
    token: str
    principal: Principal
    expires_at: datetime


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def sign_in(db: Database, key: str, client: str | None, hours: float) -> ConsoleSession:
    """Check the key (Unauthorized if it is not a live key) and open a session for it.

    The database opens the session only for the key whose secret's hash it is handed
    (elephant_console_sign_in), and writes the sign-in to the audit log: the app role
    cannot mint a session for a key it does not hold."""
    principal = authenticate(db, key, client)
    if not principal.has("read"):
        raise Forbidden("the console needs a key with the 'read' scope")
    token = secrets.token_urlsafe(TOKEN_BYTES)
    with db.connection() as conn:
        row = conn.execute(
            "SELECT elephant_console_sign_in(%s, %s, %s, %s, %s)",
            (_hash(token), principal.prefix, secret_hash(key), round(hours * 3600), client),
        ).fetchone()
    if row is None or row[0] is None:  # revoked between the two statements
        raise Unauthorized(INVALID_KEY)
    return ConsoleSession(token=token, principal=principal, expires_at=row[0])


def session_principal(db: Database, token: str | None) -> Principal | None:
    """The principal of a live session, or None (unknown, expired, key revoked or expired)."""
    if not token or len(token) > 200:
        return None
    with db.connection() as conn:
        row = conn.execute(load_sql("access/console_session.sql"), (_hash(token),)).fetchone()
    if row is None:
        return None
    key_id, prefix, name, tenant, scopes, key_expires_at, revoked_at = row
    if revoked_at is not None or (
        key_expires_at is not None and key_expires_at <= datetime.now(key_expires_at.tzinfo)
    ):
        return None
    return Principal(
        name=name, scopes=frozenset(scopes), tenant=tenant, prefix=prefix, key_id=str(key_id)
    )


def sign_out(db: Database, token: str | None) -> None:
    if token and len(token) <= 200:
        with db.connection() as conn:
            conn.execute("SELECT elephant_console_close(%s)", (_hash(token),))
