"""HTTP layer: ``POST /rerank`` and ``GET /health`` on Litestar.

Scoring runs in a single worker thread, so concurrent requests queue up
instead of competing for the model; errors come back as JSON, never crash.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from litestar import Litestar, Request, Response, get, post

from reranker_server.scoring import ModelInfo

log = logging.getLogger("reranker_server")

ALLOWED_FIELDS = frozenset({"query", "documents", "instruction", "top_n"})


class Scorer(Protocol):
    """What the HTTP layer needs from a model (see :class:`scoring.Reranker`)."""

    @property
    def info(self) -> ModelInfo: ...

    def score(
        self, query: str, documents: list[str], instruction: str | None = None
    ) -> list[float]: ...


@dataclass(frozen=True)
class Limits:
    """Request bounds enforced before any scoring."""

    max_documents: int = 500
    max_query_chars: int = 4000
    max_document_chars: int = 20000


@dataclass(frozen=True)
class RerankRequest:
    """A validated ``POST /rerank`` body."""

    query: str
    documents: list[str]
    instruction: str | None
    top_n: int | None


class RequestError(Exception):
    """A client error with its HTTP status."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def parse_request(raw: bytes, limits: Limits) -> RerankRequest:
    """Validate a request body, raising :class:`RequestError` (413 or 422)."""
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RequestError(422, f"body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise RequestError(422, "body must be a JSON object")
    unknown = sorted(set(body) - ALLOWED_FIELDS)
    if unknown:
        raise RequestError(422, f"unknown fields: {', '.join(unknown)}")
    query, documents = body.get("query"), body.get("documents")
    instruction, top_n = body.get("instruction"), body.get("top_n")
    if not isinstance(query, str) or not query.strip():
        raise RequestError(422, "query must be a non-empty string")
    if len(query) > limits.max_query_chars:
        raise RequestError(422, f"query is longer than {limits.max_query_chars} characters")
    if not isinstance(documents, list) or not documents:
        raise RequestError(422, "documents must be a non-empty list of strings")
    if len(documents) > limits.max_documents:
        raise RequestError(
            413, f"{len(documents)} documents exceed the limit of {limits.max_documents}"
        )
    for index, document in enumerate(documents):
        if not isinstance(document, str):
            raise RequestError(422, f"documents[{index}] must be a string")
        if len(document) > limits.max_document_chars:
            raise RequestError(
                422,
                f"documents[{index}] is longer than {limits.max_document_chars} characters",
            )
    if instruction is not None and not isinstance(instruction, str):
        raise RequestError(422, "instruction must be a string")
    if instruction is not None and len(instruction) > limits.max_query_chars:
        raise RequestError(422, f"instruction is longer than {limits.max_query_chars} characters")
    if top_n is not None and (
        not isinstance(top_n, int) or isinstance(top_n, bool) or not 1 <= top_n <= len(documents)
    ):
        raise RequestError(422, f"top_n must be an integer between 1 and {len(documents)}")
    return RerankRequest(query, documents, instruction or None, top_n)


def rank(scores: list[float], top_n: int | None) -> list[dict[str, Any]]:
    """Results sorted by score descending, ties by index."""
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    return [{"index": i, "score": scores[i]} for i in order[:top_n]]


def error(status: int, detail: str) -> Response[dict[str, Any]]:
    return Response({"status_code": status, "detail": detail}, status_code=status)


def create_app(scorer: Scorer, limits: Limits | None = None) -> Litestar:
    """The Litestar app serving ``scorer``."""
    limits = limits or Limits()
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rerank")
    info = scorer.info

    @get("/health", sync_to_thread=False)
    def health() -> dict[str, Any]:
        return {
            "status": "ok",
            "model": info.model,
            "kind": info.kind,
            "device": info.device,
            "max_length": info.max_length,
        }

    @post("/rerank", status_code=200)
    async def rerank(request: Request[Any, Any, Any]) -> Response[dict[str, Any]]:
        try:
            parsed = parse_request(await request.body(), limits)
        except RequestError as exc:
            return error(exc.status, exc.detail)
        started = time.perf_counter()
        loop = asyncio.get_running_loop()
        try:
            scores = await loop.run_in_executor(
                executor, scorer.score, parsed.query, parsed.documents, parsed.instruction
            )
        except Exception as exc:  # any model failure becomes a 500 JSON body
            log.exception("scoring failed")
            return error(500, f"scoring failed: {type(exc).__name__}: {exc}")
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        body = {
            "results": rank(scores, parsed.top_n),
            "model": info.model,
            "elapsed_ms": elapsed_ms,
        }
        return Response(body, status_code=200)

    body_limit = limits.max_documents * (limits.max_document_chars + 16) * 4 + 1_000_000
    return Litestar(
        route_handlers=[health, rerank],
        request_max_body_size=body_limit,
        on_shutdown=[lambda: executor.shutdown(wait=False)],
    )
