"""The console's browser side of a session: its cookie and the CSRF token of its forms.

The session itself (a row opened with an API key, revocable, checked on every request)
is app/services/access/console_sessions.py; here is only what travels over HTTP. The
cookie holds the random session token (HttpOnly, SameSite=Strict, scoped to /ui), never
the key. The CSRF token of a session is derived from the session token, which a
cross-site page cannot read, so any API process can check it without storing it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from http.cookies import CookieError, SimpleCookie

from litestar.datastructures import Cookie, Headers

COOKIE = "elephant_session"
COOKIE_PATH = "/ui"  # the console's mount (app/console CONSOLE_PATH): no API route sees it
# In keyless local mode there is no session: forms carry a token keyed by this process.
_LOCAL_SECRET = secrets.token_bytes(32)


def session_cookie(token: str, *, secure: bool, max_age: int) -> Cookie:
    """The cookie that carries a new session's token to the browser."""
    return Cookie(
        key=COOKIE,
        value=token,
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=secure,
        max_age=max_age,
    )


def read_session_token(headers: Headers) -> str | None:
    """The console session token from the Cookie header, if any."""
    jar = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except CookieError:
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None and morsel.value else None


def csrf_token(session_token: str | None) -> str:
    """The token a console form must carry: bound to the session (or, keyless, the process)."""
    if session_token is None:
        return hmac.new(_LOCAL_SECRET, b"local", hashlib.sha256).hexdigest()
    return hashlib.sha256(b"csrf:" + session_token.encode()).hexdigest()


def csrf_matches(expected: str, presented: str | None) -> bool:
    return presented is not None and hmac.compare_digest(expected, presented)
