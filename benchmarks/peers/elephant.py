"""Elephant itself, as a user runs it: in process (the search service on the embedded
Postgres) and end to end over HTTP (the REST API on uvicorn, one keep-alive client).

Elephant does not store the runner's windows: it ingests the LoCoMo conversations
through its own write path (commit_conversation: windows, gate, dedup, then fact
extraction with the offline extractor and the graph), so it is given the conversations
(``ingest_conversations``) and its hits are its own windows and facts, scored by their
source turns. At scale it gets the synthetic corpus by benchmarks/scale.py's bulk load
(memories, passages and facts, as the scale benchmark measures). Every vector the run
computed is handed over through an embedder that looks texts up; what it was not given
(extracted facts, entity names) the real model embeds, and that time is left out of
ingest as the issue asks.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from app import __version__
from app.config import Settings
from app.providers.embedder import Embedder, LocalEmbedder
from app.services.jobs.runner import drain
from app.services.memory import ingest as ingest_service
from app.services.retrieval.schemas import SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant
from benchmarks.auth import served
from benchmarks.locomo import turn_ids
from benchmarks.peers.base import Capabilities, Doc, Hit, Vector

CAPABILITIES = Capabilities(
    hybrid="yes: dense windows + dense facts + BM25 + graph lanes, RRF in one SQL statement",
    filters="yes: source, kind, created/event ranges, as-of, in SQL",
    transactions="yes: PostgreSQL transactions (a commit is atomic)",
    isolation="yes: row-level security per tenant (and API keys bound to tenants)",
    temporal="yes: bi-temporal facts, contradictions close old facts in time",
    graph="yes: entity graph (Apache AGE or relational) as a search lane",
)


class CachedEmbedder:
    """The run's vectors for the texts it computed; anything else goes to the real model,
    whose time is counted (``model_seconds``) so that ingest can leave it out."""

    def __init__(self, vectors: dict[str, Vector], model: Embedder) -> None:
        self.vectors = vectors
        self.model = model
        self.model_name = model.model_name
        self.dim = model.dim
        self.model_seconds = 0.0

    def embed_documents(self, texts: Sequence[str]) -> Any:
        return self._embed(texts, self.model.embed_documents)

    def embed_queries(self, texts: Sequence[str]) -> Any:
        return self._embed(texts, self.model.embed_queries)

    def _embed(self, texts: Sequence[str], compute: Any) -> Any:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        missing = [i for i, text in enumerate(texts) if text not in self.vectors]
        if missing:
            started = time.perf_counter()
            computed = compute([texts[i] for i in missing])
            self.model_seconds += time.perf_counter() - started
            for row, i in enumerate(missing):
                out[i] = computed[row]
        for i, text in enumerate(texts):
            if text in self.vectors:
                out[i] = self.vectors[text]
        return out


class ElephantPeer:
    """The search service in process: what an application embedding Elephant calls."""

    name = "elephant"
    shares_data_with: str | None = None

    def __init__(self, vectors: dict[str, Vector]) -> None:
        self.embedder = CachedEmbedder(vectors, LocalEmbedder(Settings().embedding))
        self.elephant: Elephant | None = None
        self.embedding_seconds = 0.0  # model time spent inside the last ingest
        self.sql_ms: list[float] = []  # seconds of the SQL statement, per search (explain)
        self.record_access = True  # as shipped; the recording A/B turns it off for half

    def version(self) -> str:
        return f"elephant {__version__} (embedded PostgreSQL 18, pgvector, AGE, pg_textsearch)"

    def settings(self) -> dict[str, Any]:
        assert self.elephant is not None
        search_settings = self.elephant.settings.search
        return {
            "search": "default settings: fused lanes (windows 45, facts 15, keyword 10 per "
            f"variant, graph), RRF k={search_settings.rrf_k}, expansion off, no reranker, "
            "no LLM; access recording on (batched aside, as shipped)",
            "rrf_k": search_settings.rrf_k,
            "ingest": "commit_conversation (5/2 windows, gate, dedup) + offline fact "
            "extraction drained; at scale: benchmarks/scale.py bulk load, then the "
            "tenant-index keeper once (as the worker would; it records the way the tenant's "
            "vector lanes are served: one tenant holding every row, the shared HNSW graphs)",
            "storage": "embedded PostgreSQL in the run's work dir",
        }

    def capabilities(self) -> Capabilities:
        return CAPABILITIES

    def open(self, workdir: Path) -> None:
        settings = Settings.model_validate(
            {"data_dir": str(workdir), "log": {"level": "WARNING"}, "worker": {"enabled": False}}
        )
        self.elephant = Elephant.open(settings, embedder=self.embedder, use_llm_from_settings=False)

    def ingest_conversations(self, items: list[ingest_service.Item]) -> None:
        """The LoCoMo sessions through the write path, then every extraction job."""
        assert self.elephant is not None
        before = self.embedder.model_seconds
        ingest_service.ingest(self.elephant, items)
        drain(self.elephant)
        self.embedding_seconds = self.embedder.model_seconds - before

    def ingest(self, docs: list[Doc]) -> None:
        raise NotImplementedError("Elephant ingests conversations or a scale corpus")

    def ingest_corpus(self, corpus: Any) -> None:
        """A benchmarks/scale.py corpus by its bulk load (COPY, then the indexes), then the
        tenant-index keeper once, as the worker runs it every search.tenant_index_check_s
        (app/db/tenant_indexes.py): it records how the tenant's vector lanes are served.
        Without it the bulk-loaded tenant has no recorded way and is read exactly (every
        row's distance): ~70 ms at 20k, ~440 ms at 100k, where a deployment whose worker
        has run once serves its one big tenant by the shared HNSW graphs."""
        from app.db.tenant_indexes import keep
        from benchmarks.scale import bulk_load

        assert self.elephant is not None
        bulk_load(self.elephant.db, corpus)
        keep(self.elephant.db.admin_connection, self.elephant.settings.search.tenant_index_rows)
        self.elephant.vector_ways.forget()

    def search(self, tenant: str, query: str, vector: Vector, k: int) -> list[Hit]:
        assert self.elephant is not None
        self.embedder.vectors.setdefault(query, vector)
        request = SearchRequest(query=query, limit=k, explain=True)  # for the SQL time
        result = search(self.elephant, tenant, request, record_access=self.record_access)
        if result.explain is not None:
            self.sql_ms.append(result.explain.timings_ms.sql / 1000)
        return [Hit(hit.id, turn_ids(hit.source_turn_ids or [])) for hit in result.hits]

    def close(self) -> None:
        if self.elephant is not None:
            self.elephant.close()
            self.elephant = None


class ElephantHTTPPeer:
    """The same database through the REST API: POST /search on uvicorn, JSON both ways."""

    name = "elephant_http"
    shares_data_with: str | None = "elephant"

    def __init__(self, inner: ElephantPeer) -> None:
        self.inner = inner
        self.stack = contextlib.ExitStack()
        self.client: httpx.Client | None = None

    def version(self) -> str:
        return self.inner.version() + " over HTTP (Litestar on uvicorn)"

    def settings(self) -> dict[str, Any]:
        return {
            **self.inner.settings(),
            "transport": "POST /search, JSON, one keep-alive httpx client, auth.mode local",
        }

    def capabilities(self) -> Capabilities:
        return CAPABILITIES

    def open(self, workdir: Path) -> None:
        """Serve the in-process peer's runtime (open it first), as benchmarks/auth.py does."""
        elephant = self.inner.elephant
        assert elephant is not None, "open the in-process peer first"
        local = elephant.settings.model_copy(
            update={"auth": elephant.settings.auth.model_copy(update={"mode": "local"})}
        )
        url = self.stack.enter_context(served(local, elephant))
        self.client = self.stack.enter_context(httpx.Client(base_url=url, timeout=60))

    def ingest(self, docs: list[Doc]) -> None:
        raise NotImplementedError("shares the in-process peer's database")

    def search(self, tenant: str, query: str, vector: Vector, k: int) -> list[Hit]:
        assert self.client is not None
        self.inner.embedder.vectors.setdefault(query, vector)
        answer = self.client.post(
            "/search",
            json={"query": query, "limit": k},
            headers={"X-Elephant-Tenant": tenant},
        )
        answer.raise_for_status()
        return [
            Hit(str(hit["id"]), turn_ids(hit.get("source_turn_ids") or []))
            for hit in answer.json()["results"]
        ]

    def close(self) -> None:
        self.stack.close()
        self.client = None


def make(vectors: dict[str, Vector]) -> list[Any]:
    inner = ElephantPeer(vectors)
    return [inner, ElephantHTTPPeer(inner)]
