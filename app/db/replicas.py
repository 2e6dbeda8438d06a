"""Streaming read replicas: one pool per ``database.replica_urls`` entry, round robin.

Reads that may lag (searches, stats, graph reads) take a connection here; writes and
reads that must see the caller's own writes stay on the primary. A replica serves
while it is a standby (``pg_is_in_recovery()``) whose replay is at most
``database.replica_max_lag_s`` behind, checked every ``database.replica_check_s``.
One that cannot be reached, lags, or is no longer a standby (promoted: it stopped
following the primary, so its data would drift from it without bound) is skipped for
``database.replica_retry_s`` (doubling while it keeps failing), then the next read
tries it again; with none healthy, :meth:`ReplicaSet.acquire` returns None and the
read goes to the primary. Nothing here writes: replicas are never migrated, and
schema and embedding checks happen on the primary.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from app.config import DatabaseSettings
from app.db.resources import load_sql
from app.errors import DatabaseUnavailable

log = logging.getLogger(__name__)

Connection = psycopg.Connection[tuple[Any, ...]]
Consistency = Literal["replica", "primary"]
"""Where a read may run: ``replica`` (may lag the primary), ``primary`` (sees every commit)."""

MAX_BACKOFF_FACTOR = 8
# In recovery, and the lag in seconds (0 while everything received is replayed).
HEALTH = load_sql("db/replica_health.sql")


class ReplicaUnavailable(DatabaseUnavailable):
    """A replica failed under a read that had started on it (connection lost, a query
    cancelled by a recovery conflict): the same read can run again on the primary."""


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """One replica as an operator sees it (``name``: host, port and database; no secret)."""

    name: str
    healthy: bool
    served: int
    failures: int
    reason: str | None


def describe(url: str) -> str:
    """host:port/dbname of a URL, without its user or password (for logs and status)."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "(unparseable replica URL)"
    return f"{parts.get('host') or 'localhost'}:{parts.get('port') or 5432}/{parts.get('dbname')}"


class _Replica:
    def __init__(self, name: str, pool: ConnectionPool[Connection]) -> None:
        self.name = name
        self.pool = pool
        self.healthy = True
        self.checked_at = -math.inf
        self.retry_at = 0.0
        self.failures = 0
        self.served = 0
        self.reason: str | None = None


@dataclass(frozen=True, slots=True)
class Lease:
    """A replica connection lent to one read; give it back with :meth:`ReplicaSet.release`."""

    replica: _Replica
    conn: Connection


class ReplicaSet:
    """The configured replicas with their health; safe to share between threads."""

    def __init__(
        self,
        urls: Sequence[str],
        settings: DatabaseSettings,
        configure: Callable[[Connection], None],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings = settings
        self._clock = clock
        self._lock = threading.Lock()
        self._next = 0
        self._leased: dict[int, _Replica] = {}
        self._replicas = [
            _Replica(describe(url), self._pool(url, index, configure))
            for index, url in enumerate(urls)
        ]

    def _pool(
        self, url: str, index: int, configure: Callable[[Connection], None]
    ) -> ConnectionPool[Connection]:
        """Sized and configured like the primary's app pool, but opened without waiting:
        a replica that is down at start must not stop the service from starting."""
        timeout = self._settings.replica_timeout_s
        pool: ConnectionPool[Connection] = ConnectionPool(
            url,
            min_size=self._settings.pool_min_size,
            max_size=self._settings.pool_max_size,
            timeout=timeout,
            kwargs={
                "connect_timeout": max(2, math.ceil(timeout)),  # libpq rounds 1 up to 2
                **({} if self._settings.prepares else {"prepare_threshold": None}),
            },
            configure=configure,
            check=ConnectionPool.check_connection,
            open=False,
            name=f"elephant-replica-{index}",
        )
        pool.open(wait=False)
        return pool

    def close(self) -> None:
        for replica in self._replicas:
            replica.pool.close()

    # ------------------------------------------------------------ reads

    def acquire(self) -> Lease | None:
        """A connection on a healthy replica, or None: then the read goes to the primary."""
        for replica in self._candidates():
            conn = self._checked_out(replica)
            if conn is not None:
                with self._lock:
                    self._leased[id(conn)] = replica
                return Lease(replica, conn)
        return None

    def release(self, lease: Lease, *, served: bool) -> None:
        with self._lock:
            self._leased.pop(id(lease.conn), None)
            if served:
                lease.replica.served += 1
        lease.replica.pool.putconn(lease.conn)

    def failed(self, lease: Lease, exc: psycopg.Error) -> None:
        """A read on ``lease`` failed: a lost connection takes the replica out of rotation;
        a query cancelled by a recovery conflict does not (the next read may well pass)."""
        if lease.conn.broken or lease.conn.closed:
            self._down(lease.replica, f"connection lost: {exc}")

    def replica_of(self, conn: Connection) -> str | None:
        """The replica ``conn`` is leased from, or None (a primary connection)."""
        with self._lock:
            replica = self._leased.get(id(conn))
        return None if replica is None else replica.name

    def states(self) -> list[ReplicaState]:
        with self._lock:
            return [
                ReplicaState(r.name, r.healthy, r.served, r.failures, r.reason)
                for r in self._replicas
            ]

    # ------------------------------------------------------------ health

    def _candidates(self) -> list[_Replica]:
        """Unhealthy replicas whose back-off is over first (one read claims each retry, so
        they come back), then the healthy ones, rotated by one per read (round robin)."""
        with self._lock:
            now = self._clock()
            due = [r for r in self._replicas if not r.healthy and now >= r.retry_at]
            for replica in due:
                replica.retry_at = now + self._backoff(replica.failures)
            healthy = [r for r in self._replicas if r.healthy]
            if healthy:
                start = self._next % len(healthy)
                self._next = start + 1
                healthy = healthy[start:] + healthy[:start]
        return due + healthy

    def _checked_out(self, replica: _Replica) -> Connection | None:
        try:
            conn = replica.pool.getconn()
        except psycopg.Error as exc:  # PoolTimeout: nothing reachable within replica_timeout_s
            self._down(replica, f"unreachable: {exc}")
            return None
        now = self._clock()
        if replica.healthy and now - replica.checked_at < self._settings.replica_check_s:
            return conn
        try:
            problem = self._health(conn)
        except psycopg.Error as exc:
            replica.pool.putconn(conn)
            self._down(replica, f"health check failed: {exc}")
            return None
        if problem is not None:
            replica.pool.putconn(conn)
            self._down(replica, problem)
            return None
        self._up(replica, now)
        return conn

    def _health(self, conn: Connection) -> str | None:
        """Why this server should not serve reads now, or None."""
        try:
            row = conn.execute(HEALTH).fetchone()
        finally:
            if not conn.broken:
                conn.rollback()
        in_recovery, lag = row if row is not None else (None, None)
        if not in_recovery:
            return "not a standby (promoted?): it no longer follows the primary"
        if lag is None:
            return "replay position unknown (not streaming, nothing replayed yet)"
        if lag > self._settings.replica_max_lag_s:
            return f"replay lag {lag:.1f}s above database.replica_max_lag_s"
        return None

    def _down(self, replica: _Replica, reason: str) -> None:
        with self._lock:
            replica.failures += 1
            replica.retry_at = self._clock() + self._backoff(replica.failures)
            was_healthy, replica.healthy, replica.reason = replica.healthy, False, reason
        if was_healthy:
            log.warning("read replica %s left the rotation: %s", replica.name, reason)

    def _up(self, replica: _Replica, now: float) -> None:
        with self._lock:
            was_down = not replica.healthy
            replica.healthy, replica.failures, replica.reason = True, 0, None
            replica.checked_at = now
        if was_down:
            log.info("read replica %s is back in the rotation", replica.name)

    def _backoff(self, failures: int) -> float:
        factor = min(1 << max(failures - 1, 0), MAX_BACKOFF_FACTOR)
        return float(self._settings.replica_retry_s * factor)
