"""The budget of failed key checks, shared by every HTTP door of one process; a failed
guess never locks out the right secret.

Checking a presented API key costs a database lookup, and a refusal writes an audit
row; a guesser must not get these for free. One :class:`FailedAuthGuard` per process
(the API builds one; `elephant mcp --http` another) is used by REST's AccessMiddleware
(app/web/access.py), the gate in front of MCP over HTTP (app/mcp/http.py) and the
console's sign-in (app/console/pages/signin.py), so a failure at any door counts
against the same budget. A key is ``ek_<prefix>_<secret>``: the prefix is not a secret
(the audit log and ``keys list`` show it), so a budget that refused a *prefix* before
its lookup let anyone behind a key's address (a NAT, a proxy) lock that key out with
one guess every two seconds. Instead the guard remembers, per prefix, the SHA-256 of the
whole key the last time it verified in this process (the hash the database keeps; the
process sees the keys anyway), and sorts each presented token into one of three:

- **the remembered key** (same prefix, same hash, compared in constant time): always
  looked up, never refused by any budget. The lookup still decides (a revoked or
  expired key fails, and is then forgotten).
- **provably wrong**: a malformed token, or a remembered prefix with another secret
  (a prefix belongs to one key, so its other secrets cannot verify). Refused with 401
  *without* a lookup, and counted per client address and prefix (every malformed token
  of one address shares one bucket): ``auth.rate_denied_per_minute`` failures (30),
  then 429 with Retry-After (not audited), so the audit rows stay bounded; and per
  address across such prefixes, ``ADDRESS_FACTOR`` (10) times that.
- **unknown** (a prefix that has not verified in this process since it started):
  looked up, within the address's budget of failed lookups, ``ADDRESS_FACTOR`` times
  the budget (300 a minute), then 429 before the lookup. There is no per-prefix
  refusal here (it was what locked keys out), and none is needed for the bound: a
  guesser drawing a fresh prefix per try could always spend the address's whole
  budget. The price: while one address fails more than 300 lookups a minute, a key
  first presented in this process from that address waits, like the guesser, for the
  bucket to refill (Retry-After says how long); once it has verified (from any
  address) it is never held again.

So from one address a guesser causes at most 300 lookups and 600 audit rows a minute
(with the defaults), and a correct secret is refused only in that price's case. Keys are
256 random bits, so the budget is not what stops guessing.
The client address is the peer's, or the one a trusted proxy reports
(``auth.trusted_proxies``, app/web/proxies.py). Limits are per process, as all of
app/web/ratelimit.py's; remembered keys are the ``MAX_BUCKETS`` last verified.
``auth.rate_denied_per_minute = 0`` turns the budgets off.
"""

from __future__ import annotations

import hmac
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

import anyio.to_thread

from app.config import AuthSettings
from app.db.runtime import Database
from app.errors import Unauthorized
from app.services.access.auth import INVALID_KEY, KEY_PATTERN, Principal, authenticate, secret_hash
from app.web.ratelimit import MAX_BUCKETS, RateLimiter

ADDRESS_FACTOR = 10  # an address's failures across prefixes: this x the budget
MALFORMED = "malformed"  # the one bucket per address of tokens that are not ek_<prefix>_...
PER_KEY = "denied"  # the limiter's kinds (they name the limit in the 429's message)
PER_ADDRESS = "denied (unknown keys)"
WRONG_PER_ADDRESS = "denied (wrong secrets)"

T = TypeVar("T")
Kind = Literal["remembered", "wrong", "unknown"]


def presented_prefix(token: str) -> str:
    """The key prefix a token claims (``ek_<prefix>_<secret>``), or MALFORMED."""
    match = KEY_PATTERN.match(token)
    return match.group(1) if match else MALFORMED


@dataclass(frozen=True)
class Attempt:
    """One presented token, as the guard sorted it (see the module's docstring)."""

    address: str
    prefix: str
    digest: str
    kind: Kind


class FailedAuthGuard:
    """Budgets of failed key checks per client address (and prefix), with the last
    verified hash of each prefix; see the module's docstring. Thread-safe; one per
    process, shared by its HTTP doors."""

    def __init__(self, auth: AuthSettings) -> None:
        self.per_minute = auth.rate_denied_per_minute
        self._limiter = RateLimiter()
        self._verified: OrderedDict[str, str] = OrderedDict()  # prefix -> key's SHA-256
        self._lock = threading.Lock()

    def admit(self, client: str | None, token: str) -> Attempt:
        """Sort ``token``: RateLimited (429) if its budget is spent, Unauthorized (401,
        counted) if it is provably wrong; else the attempt, for the lookup to decide."""
        attempt = self._sort(client or "?", token)
        if attempt.kind == "remembered":
            return attempt
        if attempt.kind == "unknown":
            self._limiter.check(attempt.address, PER_ADDRESS, self._address_budget)
            return attempt
        self._limiter.check(f"{attempt.address} {attempt.prefix}", PER_KEY, self.per_minute)
        self._limiter.check(attempt.address, WRONG_PER_ADDRESS, self._address_budget)
        self._limiter.charge(f"{attempt.address} {attempt.prefix}", PER_KEY, self.per_minute)
        self._limiter.charge(attempt.address, WRONG_PER_ADDRESS, self._address_budget)
        raise Unauthorized(INVALID_KEY)

    def failed(self, attempt: Attempt) -> None:
        """Count a lookup that refused the key (a remembered key is forgotten: it was
        revoked or has expired, and its next tries are unknown ones)."""
        if attempt.kind == "remembered":
            with self._lock:
                self._verified.pop(attempt.prefix, None)
        self._limiter.charge(attempt.address, PER_ADDRESS, self._address_budget)

    def verified(self, attempt: Attempt) -> None:
        """Remember the hash of a key that verified: its secret is never refused again."""
        with self._lock:
            self._verified.pop(attempt.prefix, None)
            self._verified[attempt.prefix] = attempt.digest
            while len(self._verified) > MAX_BUCKETS:
                self._verified.popitem(last=False)

    def guarded(self, client: str | None, token: str, lookup: Callable[[], T]) -> T:
        """``lookup()`` (which raises Unauthorized for a refused key) within the budget:
        admit, look up, count the outcome. Blocking: for a worker thread."""
        attempt = self.admit(client, token)
        try:
            result = lookup()
        except Unauthorized:
            self.failed(attempt)
            raise
        self.verified(attempt)
        return result

    async def authenticate(self, db: Database, token: str, client: str | None) -> Principal:
        """The principal of ``token`` (services' ``authenticate``), within the budget:
        RateLimited before the lookup when it is spent, Unauthorized (counted) when the
        key is unknown, malformed, revoked or expired. Only the lookup leaves the event
        loop: a refusal without one costs no worker thread."""
        attempt = self.admit(client, token)
        try:
            principal = await anyio.to_thread.run_sync(authenticate, db, token, client)
        except Unauthorized:
            self.failed(attempt)
            raise
        self.verified(attempt)
        return principal

    @property
    def _address_budget(self) -> int:
        return self.per_minute * ADDRESS_FACTOR

    def _sort(self, address: str, token: str) -> Attempt:
        prefix = presented_prefix(token)
        if prefix == MALFORMED:
            return Attempt(address, prefix, "", "wrong")
        digest = secret_hash(token)
        with self._lock:
            known = self._verified.get(prefix)
        if known is None:
            return Attempt(address, prefix, digest, "unknown")
        same = hmac.compare_digest(known, digest)
        return Attempt(address, prefix, digest, "remembered" if same else "wrong")
