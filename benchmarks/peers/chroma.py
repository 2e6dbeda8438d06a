"""ChromaDB (local, embedded PersistentClient): the store under the Chroma-based memory
tools (MemPalace and the like), searched by the given MiniLM vectors.

Dense only: chromadb 1.5.9's hybrid path (``Collection.search`` with sparse BM25 and
RRF) raises NotImplementedError in the local client ("Search is not implemented for
Local Chroma"; it is Chroma Cloud only), and ``where_document`` is a filter, not a
ranking. A collection per tenant, as Chroma's docs suggest for per-user data.
"""

from __future__ import annotations

import hashlib
import os
import re
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.peers.base import (
    Capabilities,
    Doc,
    Hit,
    RawStore,
    Unavailable,
    Vector,
    by_tenant,
)

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

try:
    import chromadb
    from chromadb.config import Settings

    IMPORT_ERROR = ""
except ImportError as exc:  # the peers venv lacks it: make() says so
    IMPORT_ERROR = str(exc)


def collection_name(tenant: str) -> str:
    """Chroma names need 3-512 characters of [A-Za-z0-9._-]; tenant ids may not fit."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "-", tenant)[:40]
    digest = hashlib.sha1(tenant.encode(), usedforsecurity=False).hexdigest()[:8]
    return f"t-{safe}-{digest}"


class ChromaPeer:
    """One PersistentClient under the workdir, one cosine HNSW collection per tenant."""

    name = "chroma"

    def __init__(self) -> None:
        self._client: Any = None
        self._collections: dict[str, Any] = {}
        self._store = RawStore()

    def version(self) -> str:
        return f"chromadb {metadata.version('chromadb')}"

    def settings(self) -> dict[str, Any]:
        return {
            "client": "chromadb.PersistentClient (embedded, Rust core, on disk under workdir)",
            "used_by": "the storage that Chroma-based memory stores (MemPalace) run on",
            "tenancy": "a collection per tenant (not one collection with a where filter)",
            "index": "HNSW at Chroma's defaults (M=16, ef_construction=100, ef_search=100)",
            "distance": "cosine (configuration hnsw.space=cosine, i.e. hnsw:space=cosine)",
            "embedding_function": "none: the runner's MiniLM vectors are passed as embeddings",
            "search": "collection.query(query_embeddings=..., n_results=k); dense only",
            "hybrid": "not available locally: Collection.search (sparse BM25 + Rrf) raises "
            "NotImplementedError in the local client of chromadb 1.5.9 (Chroma Cloud only)",
            "ingest": "collection.add in batches of client.get_max_batch_size()",
            "telemetry": "off (ANONYMIZED_TELEMETRY=False, Settings(anonymized_telemetry=False))",
        }

    def capabilities(self) -> Capabilities:
        return Capabilities(
            hybrid="no: dense only in the local client (sparse/BM25 + RRF search is Cloud only)",
            filters="yes: metadata where and where_document ($contains, $regex) at query time",
            transactions="no: each add is atomic on its own, no multi-call transaction",
            isolation="a collection per tenant (Chroma also has tenants/databases per client)",
            temporal="no",
            graph="no",
        )

    def open(self, workdir: Path) -> None:
        self._client = chromadb.PersistentClient(
            path=str(workdir / "chroma"),
            settings=Settings(anonymized_telemetry=False, allow_reset=False),
        )
        self._collections = {}
        self._store = RawStore()

    def _collection(self, tenant: str) -> Any:
        if tenant not in self._collections:
            self._collections[tenant] = self._client.get_or_create_collection(
                collection_name(tenant),
                configuration={"hnsw": {"space": "cosine"}},
                embedding_function=None,
            )
        return self._collections[tenant]

    def ingest(self, docs: list[Doc]) -> None:
        self._store.remember(docs)
        batch = self._client.get_max_batch_size()
        for tenant, group in by_tenant(docs).items():
            collection = self._collection(tenant)
            for start in range(0, len(group), batch):
                part = group[start : start + batch]
                collection.add(
                    ids=[d.id for d in part],
                    embeddings=[d.vector for d in part],
                    documents=[d.text for d in part],
                )

    def search(self, tenant: str, query: str, vector: Vector, k: int) -> list[Hit]:
        collection = self._collections.get(tenant)
        if collection is None:
            return []
        found = collection.query(query_embeddings=[vector], n_results=k, include=[])
        return self._store.hits(found["ids"][0])

    def close(self) -> None:
        self._collections = {}
        self._client = None


def make() -> list[ChromaPeer]:
    if IMPORT_ERROR:
        raise Unavailable(f"chromadb cannot be imported: {IMPORT_ERROR}")
    return [ChromaPeer()]
