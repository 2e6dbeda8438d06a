"""Client of the reranker service (reranker_server/), with a timeout and a circuit breaker.

Search must never fail because the reranker is down or slow: every failure
raises RerankerError, which search turns into "keep the fused order" and reports
in explain. After ``failure_threshold`` consecutive failures the breaker opens
and requests are not even attempted for ``cooldown_s``; then one trial request
decides whether it closes again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import httpx

from app.config import RerankerSettings
from app.errors import ElephantError


class RerankerError(ElephantError, status_code=503, code="reranker_unavailable"):
    """The reranker cannot be reached or answered something unusable."""


@dataclass(frozen=True)
class Reranked:
    order: list[tuple[int, float]]  # (index into the documents sent, score), best first
    model: str
    elapsed_ms: float


class HTTPReranker:
    def __init__(self, settings: RerankerSettings) -> None:
        self.settings = settings
        self._client = httpx.Client(base_url=settings.url, timeout=settings.timeout_s)
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None

    @property
    def circuit_open(self) -> bool:
        with self._lock:
            if self._opened_at is None:
                return False
            return time.monotonic() - self._opened_at < self.settings.cooldown_s

    def rerank(self, query: str, documents: Sequence[str]) -> Reranked:
        if self.circuit_open:
            raise RerankerError(
                f"reranker circuit open after {self._failures} failures; retrying after "
                f"{self.settings.cooldown_s:.0f}s"
            )
        started = time.perf_counter()
        body: dict[str, object] = {"query": query, "documents": list(documents)}
        if self.settings.instruction:
            body["instruction"] = self.settings.instruction
        try:
            response = self._client.post("/rerank", json=body)
            response.raise_for_status()
            payload = response.json()
            order = [(int(item["index"]), float(item["score"])) for item in payload["results"]]
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            self._failed()
            raise RerankerError(f"reranker at {self.settings.url} failed: {exc}") from None
        if sorted(index for index, _ in order) != list(range(len(documents))):
            self._failed()
            raise RerankerError("reranker returned indices that do not match the documents")
        self._succeeded()
        return Reranked(
            order, str(payload.get("model", "?")), (time.perf_counter() - started) * 1000
        )

    def close(self) -> None:
        self._client.close()

    def _failed(self) -> None:
        with self._lock:
            self._failures += 1
            if self._failures >= self.settings.failure_threshold:
                self._opened_at = time.monotonic()

    def _succeeded(self) -> None:
        with self._lock:
            self._failures = 0
            self._opened_at = None


def build_reranker(settings: RerankerSettings) -> HTTPReranker | None:
    return HTTPReranker(settings) if settings.enabled else None
