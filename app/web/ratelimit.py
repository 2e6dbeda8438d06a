"""Token buckets per (caller, kind of request), in this process.

A bucket holds ``per_minute`` tokens and refills continuously; a request takes
one. Limits are per process: behind N API processes a key gets N times the
rate (put a shared limiter in the proxy for a hard global cap).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict

from app.config import AuthSettings
from app.errors import RateLimited

MAX_BUCKETS = 100_000  # oldest buckets are forgotten beyond this (memory bound)


class RateLimiter:
    def __init__(self) -> None:
        self._buckets: OrderedDict[tuple[str, str], tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, caller: str, kind: str, per_minute: int) -> None:
        """Spend one token, or raise RateLimited saying when to retry. 0 = no limit."""
        self._spend(caller, kind, per_minute, cost=1.0)

    def check(self, caller: str, kind: str, per_minute: int) -> None:
        """Raise RateLimited if the bucket is empty, without spending (count failures only)."""
        self._spend(caller, kind, per_minute, cost=0.0)

    def charge(self, caller: str, kind: str, per_minute: int) -> None:
        """Spend one token, never refusing: count what already happened (a failed key
        check) even when a concurrent request emptied the bucket meanwhile."""
        self._spend(caller, kind, per_minute, cost=1.0, refuse=False)

    def _spend(
        self, caller: str, kind: str, per_minute: int, *, cost: float, refuse: bool = True
    ) -> None:
        if per_minute <= 0:
            return
        now = time.monotonic()
        rate = per_minute / 60.0
        with self._lock:
            tokens, stamp = self._buckets.pop((caller, kind), (float(per_minute), now))
            tokens = min(float(per_minute), tokens + (now - stamp) * rate)
            if refuse and tokens < 1.0:
                self._buckets[(caller, kind)] = (tokens, now)
                wait = math.ceil((1.0 - tokens) / rate)
                raise RateLimited(
                    f"too many {kind} requests: at most {per_minute} a minute; retry in {wait} s",
                    retry_after_s=wait,
                )
            self._buckets[(caller, kind)] = (max(0.0, tokens - cost), now)
            while len(self._buckets) > MAX_BUCKETS:
                self._buckets.popitem(last=False)


def per_minute(auth: AuthSettings, scope: str) -> int:
    """The configured budget of one scope (read, write, admin); 0 = no limit."""
    return {
        "read": auth.rate_read_per_minute,
        "write": auth.rate_write_per_minute,
        "admin": auth.rate_admin_per_minute,
    }.get(scope, 0)
