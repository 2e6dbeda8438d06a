"""Qdrant in local mode (``QdrantClient(path=...)``, in process, no server) with hybrid
search: a dense MiniLM vector and a BM25 sparse vector, fused by RRF in the Query API.

Local mode is Qdrant's embedded mode for development: exact (brute-force) search in
NumPy and Python, points pickled into SQLite, no HNSW and no payload indexes. The BM25
sparse vectors are computed here (fastembed's Qdrant/bm25 model cannot be downloaded);
Qdrant applies IDF itself through ``Modifier.IDF``, which local mode supports.

Tenants get a collection each: Qdrant's multitenancy guide allows that for a few tenants
that need isolation, it keeps BM25 statistics per tenant, and in local mode a payload
filter is a Python scan of every payload on every prefetch (about three quarters of the
search time at 5,000 points in one collection), which the benchmark would then measure
instead of the search.
"""

from __future__ import annotations

import importlib.metadata
import re
import uuid
import warnings
from pathlib import Path
from typing import Any

from benchmarks.peers._bm25 import K1, STOP_WORDS, B, SparseEncoder
from benchmarks.peers.base import (
    Capabilities,
    Doc,
    Hit,
    Peer,
    RawStore,
    Unavailable,
    Vector,
    by_tenant,
)

try:
    from qdrant_client import QdrantClient, models
except ImportError as exc:
    _MISSING: ImportError | None = exc
else:
    _MISSING = None

DENSE = "dense"
SPARSE = "bm25"
PREFETCH = 100  # candidates per list before fusion, at least k
BATCH = 1000


def require() -> None:
    """Raise Unavailable when qdrant-client is not installed."""
    if _MISSING is not None:
        raise Unavailable(f"qdrant-client is not installed: {_MISSING}")


def package_version() -> str:
    return f"qdrant-client {importlib.metadata.version('qdrant-client')}"


def open_client(workdir: Path) -> QdrantClient:
    """A local-mode client storing under ``workdir``. Its advice against more than 20,000
    points per collection is known (and reported in settings), so it is not printed."""
    warnings.filterwarnings("ignore", message="Local mode is not recommended")
    return QdrantClient(path=str(workdir / "qdrant"))


def collection(tenant: str) -> str:
    """The tenant's collection name (only letters, digits, '-' and '_')."""
    return "tenant_" + re.sub(r"[^A-Za-z0-9_-]", "_", tenant)


def dense_params() -> dict[str, models.VectorParams]:
    return {DENSE: models.VectorParams(size=384, distance=models.Distance.COSINE)}


def point_id(doc_id: str) -> str:
    """Qdrant ids are integers or UUIDs; a UUID derived from the document id is stable."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, doc_id))


def payload(doc: Doc) -> dict[str, str]:
    return {"doc_id": doc.id, "text": doc.text}


def doc_ids(points: list[models.ScoredPoint]) -> list[str]:
    return [str(point.payload["doc_id"]) for point in points if point.payload]


def upsert(client: QdrantClient, name: str, points: list[models.PointStruct]) -> None:
    """Batched upserts; local mode still applies (and commits) them point by point."""
    for start in range(0, len(points), BATCH):
        client.upsert(name, points=points[start : start + BATCH], wait=True)


SETTINGS_COMMON = {
    "mode": "local (embedded, in process): QdrantClient(path=...), exact brute-force search",
    "storage": "points pickled into the local mode's SQLite file, one commit per point",
    "isolation": "a collection per tenant (no payload filter needed)",
    "dense": f"named vector '{DENSE}', 384 floats, cosine, exact (local mode has no HNSW)",
    "ingest": f"upsert in batches of {BATCH}; local mode applies and commits point by point",
    "caveat": "qdrant-client warns against local mode past 20,000 points per collection",
}


class QdrantPeer:
    """Hybrid dense + BM25 sparse search, one collection per tenant."""

    name = "qdrant"
    # qdrant-client's local mode is pure Python (point-by-point commits, brute-force
    # search; the client warns against it past 20,000 points): 100k is Qdrant Edge's.
    max_docs = 20_000
    max_docs_reason = (
        "measured to 20k only: qdrant-client's local mode is pure Python (brute-force "
        "search, point-by-point commits) and warns past 20,000 points; see qdrant_edge"
    )

    def __init__(self) -> None:
        self._client: QdrantClient | None = None
        self._store = RawStore()
        self._encoders: dict[str, SparseEncoder] = {}  # per tenant: its own average length

    def version(self) -> str:
        return f"{package_version()} (local mode)"

    def settings(self) -> dict[str, Any]:
        return SETTINGS_COMMON | {
            "sparse": (
                f"named vector '{SPARSE}': BM25 term weights computed in Python (k1={K1},"
                f" b={B}, the tenant's average document length, terms hashed by CRC-32),"
                " IDF by Qdrant over the collection (SparseVectorParams(modifier=Modifier.IDF))"
            ),
            "tokeniser": (
                f"lowercase, split on non-letters/digits, {len(STOP_WORDS)} English stop"
                " words dropped, no stemming"
            ),
            "query": (
                f"Query API: prefetch dense (limit {PREFETCH}) and sparse (limit {PREFETCH}),"
                " fused by FusionQuery(fusion=Fusion.RRF) at Qdrant's default RRF k=2;"
                " dense only when the query has no word left"
            ),
            "not_used": "fastembed (its models cannot be downloaded here)",
        }

    def capabilities(self) -> Capabilities:
        return Capabilities(
            hybrid="yes: sparse BM25 (IDF by Qdrant) + dense, RRF in the Query API",
            filters="yes: payload filters (match, range, datetime) in every query/prefetch",
            transactions="no: no multi-point transactions; batches apply point by point",
            isolation="yes: a collection per tenant (a tenant payload filter scales further)",
            temporal="no: datetime payloads can be filtered, no validity intervals",
            graph="no",
        )

    def open(self, workdir: Path) -> None:
        self._client = open_client(workdir)

    def ingest(self, docs: list[Doc]) -> None:
        assert self._client is not None, "open() first"
        self._store.remember(docs)
        for tenant, group in by_tenant(docs).items():
            name = collection(tenant)
            if tenant not in self._encoders:
                self._client.create_collection(
                    name,
                    vectors_config=dense_params(),
                    sparse_vectors_config={
                        SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)
                    },
                )
                self._encoders[tenant] = SparseEncoder()
            encoder = self._encoders[tenant]
            encoder.fit([doc.text for doc in group])
            upsert(self._client, name, [self._point(encoder, doc) for doc in group])

    @staticmethod
    def _point(encoder: SparseEncoder, doc: Doc) -> models.PointStruct:
        indices, values = encoder.document(doc.text)
        vector: dict[str, Any] = {DENSE: doc.vector.tolist()}
        if indices:
            vector[SPARSE] = models.SparseVector(indices=indices, values=values)
        return models.PointStruct(id=point_id(doc.id), vector=vector, payload=payload(doc))

    def search(self, tenant: str, query: str, vector: Vector, k: int) -> list[Hit]:
        assert self._client is not None, "open() first"
        if tenant not in self._encoders:
            return []
        name = collection(tenant)
        indices, values = SparseEncoder.query(query)
        if not indices:  # only stop words: nothing for BM25 to match
            response = self._client.query_points(
                name, query=vector.tolist(), using=DENSE, limit=k, with_payload=["doc_id"]
            )
            return self._store.hits(doc_ids(response.points))
        limit = max(PREFETCH, k)
        response = self._client.query_points(
            name,
            prefetch=[
                models.Prefetch(query=vector.tolist(), using=DENSE, limit=limit),
                models.Prefetch(
                    query=models.SparseVector(indices=indices, values=values),
                    using=SPARSE,
                    limit=limit,
                ),
            ],
            query=models.FusionQuery(fusion=models.Fusion.RRF),
            limit=k,
            with_payload=["doc_id"],
        )
        return self._store.hits(doc_ids(response.points))

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def make() -> list[Peer]:
    require()
    return [QdrantPeer()]
