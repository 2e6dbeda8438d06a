"""The budget of failed key checks, shared by every HTTP door of one process.

Checking a presented API key costs a database lookup, and a refusal writes an audit
row; a guesser must not get these for free. One :class:`FailedAuthGuard` per process
(the API builds one; `elephant mcp --http` another) is used by REST's AccessMiddleware
(app/web/access.py) and by the gate in front of MCP over HTTP (app/mcp/http.py), so a
failure on either counts against the same budget. Two buckets, each refilling over a
minute:

- **per client address and presented key prefix** (``ek_<prefix>_<secret>``; every
  malformed token of one address shares one bucket): ``auth.rate_denied_per_minute``
  failures (30), then 429 with Retry-After for that prefix from that address, before any
  lookup. A valid key from the same address (a shared NAT, a proxy) has another prefix,
  so it keeps working while the guesser is throttled. Someone behind the same address
  who knows a key's prefix (it is not a secret: the audit log and ``keys list`` show it)
  can still throttle that key from that address, never from another.
- **per client address, across prefixes never seen to verify**: ``ADDRESS_FACTOR``
  (10) times that budget (300 a minute). Without it, a guesser who draws a fresh prefix
  for each try (as random guessing does) would get a fresh bucket, and so an unbounded
  stream of lookups and audit rows. Every failure of a prefix that has not verified in
  this process counts; when the bucket is empty, such prefixes get 429 before their
  lookup. A prefix that verified successfully (any address, since the process started)
  is never blocked by this cap, only by its own bucket: a working key behind the
  guesser's address keeps working. The price: a valid key first presented in this
  process while its address is over the cap waits, like the guesser, for the bucket to
  refill (Retry-After says how long).

Keys are 256 random bits, so the budget is not what stops guessing; it bounds the work
and the audit rows one address can cause. Limits are per process, as all of
app/web/ratelimit.py's. ``auth.rate_denied_per_minute = 0`` turns both off.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import anyio.to_thread

from app.config import AuthSettings
from app.db.runtime import Database
from app.errors import Unauthorized
from app.services.access.auth import KEY_PATTERN, Principal, authenticate
from app.web.ratelimit import MAX_BUCKETS, RateLimiter

ADDRESS_FACTOR = 10  # failures of never-verified prefixes per address: this x the budget
MALFORMED = "malformed"  # the one bucket per address of tokens that are not ek_<prefix>_...
PER_KEY = "denied"  # the limiter's kinds (they name the limit in the 429's message)
PER_ADDRESS = "denied (unknown keys)"


def presented_prefix(token: str) -> str:
    """The key prefix a token claims (``ek_<prefix>_<secret>``), or MALFORMED."""
    match = KEY_PATTERN.match(token)
    return match.group(1) if match else MALFORMED


class FailedAuthGuard:
    """Counts failed key checks per (client address, key prefix) and per address; see
    the module's docstring. Thread-safe; one per process, shared by its HTTP doors."""

    def __init__(self, auth: AuthSettings) -> None:
        self.per_minute = auth.rate_denied_per_minute
        self._limiter = RateLimiter()
        self._verified: OrderedDict[str, None] = OrderedDict()  # prefixes seen to verify
        self._lock = threading.Lock()

    def check(self, client: str | None, token: str) -> None:
        """RateLimited (429) if this token's budget from this address is spent; spends
        nothing (only failures count)."""
        address, prefix = client or "?", presented_prefix(token)
        self._limiter.check(f"{address} {prefix}", PER_KEY, self.per_minute)
        if not self._known(prefix):
            self._limiter.check(address, PER_ADDRESS, self.per_minute * ADDRESS_FACTOR)

    def failed(self, client: str | None, token: str) -> None:
        """Count one failed check of ``token`` from ``client``."""
        address, prefix = client or "?", presented_prefix(token)
        self._limiter.charge(f"{address} {prefix}", PER_KEY, self.per_minute)
        if not self._known(prefix):
            self._limiter.charge(address, PER_ADDRESS, self.per_minute * ADDRESS_FACTOR)

    def verified(self, principal: Principal) -> None:
        """Remember a prefix that verified: the per-address cap never blocks it."""
        if principal.prefix is None:
            return
        with self._lock:
            self._verified.pop(principal.prefix, None)
            self._verified[principal.prefix] = None
            while len(self._verified) > MAX_BUCKETS:
                self._verified.popitem(last=False)

    async def authenticate(self, db: Database, token: str, client: str | None) -> Principal:
        """The principal of ``token`` (services' ``authenticate``), within the budget:
        RateLimited before the lookup when it is spent, Unauthorized (counted) when the
        key is unknown, malformed, revoked or expired."""
        self.check(client, token)
        try:
            principal = await anyio.to_thread.run_sync(authenticate, db, token, client)
        except Unauthorized:
            self.failed(client, token)
            raise
        self.verified(principal)
        return principal

    def _known(self, prefix: str) -> bool:
        with self._lock:
            return prefix in self._verified
