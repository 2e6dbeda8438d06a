"""Qdrant Edge (``qdrant-edge-py``): Qdrant's Rust engine embedded in the process, no
server, with the same hybrid search as the ``qdrant`` peer (local mode): a dense MiniLM
vector and a BM25 sparse vector, fused by RRF in the Query API.

Edge has the pieces the server has: named dense and sparse vectors, the sparse IDF
modifier (``Modifier.Idf``), prefetch + ``Fusion.Rrf``, HNSW. What it lacks is the
server's background optimizer: points land in an appendable segment that is searched
by brute force until ``EdgeShard.optimize()`` runs, which builds HNSW for segments past
the indexing threshold. ``ingest`` calls it at the end, so its cost is counted in ingest
(a server would pay it in the background after the upload returned).

The BM25 term weights are ``_bm25.py``'s, as in ``qdrant.py`` and ``seeds.py``, so the
three Qdrant peers differ in the engine only. A tenant gets an Edge shard (a directory)
of its own: Edge has no collections, and a shard keeps its BM25 statistics per tenant.
"""

from __future__ import annotations

import importlib.metadata
import re
import uuid
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
    import qdrant_edge as edge
except ImportError as exc:
    _MISSING: ImportError | None = exc
else:
    _MISSING = None

DENSE = "dense"
SPARSE = "bm25"
PREFETCH = 100  # candidates per list before fusion, at least k
RRF_K = 2  # the Qdrant server's default (FusionQuery RRF); Edge makes it explicit
BATCH = 1000


def require() -> None:
    """Raise Unavailable when qdrant-edge-py is not installed or its engine cannot load."""
    if _MISSING is not None:
        raise Unavailable(f"qdrant-edge-py is not installed: {_MISSING}")


def package_version() -> str:
    return f"qdrant-edge-py {importlib.metadata.version('qdrant-edge-py')}"


def shard_dir(root: Path, tenant: str) -> Path:
    """The tenant's shard directory (only letters, digits, '-' and '_' in its name)."""
    return root / ("tenant_" + re.sub(r"[^A-Za-z0-9_-]", "_", tenant))


def config() -> edge.EdgeConfig:
    """Dense cosine + sparse with IDF; everything else at Edge's defaults."""
    return edge.EdgeConfig(
        vectors={DENSE: edge.EdgeVectorParams(size=384, distance=edge.Distance.Cosine)},
        sparse_vectors={SPARSE: edge.EdgeSparseVectorParams(modifier=edge.Modifier.Idf)},
    )


def point_id(doc_id: str) -> str:
    """Edge ids are integers or UUIDs; a UUID derived from the document id is stable."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, doc_id))


def point(encoder: SparseEncoder, doc: Doc) -> edge.Point:
    indices, values = encoder.document(doc.text)
    vector: dict[str, Any] = {DENSE: doc.vector.tolist()}
    if indices:
        vector[SPARSE] = edge.SparseVector(indices, values)
    return edge.Point(point_id(doc.id), vector, {"doc_id": doc.id, "text": doc.text})


def doc_ids(points: list[edge.ScoredPoint]) -> list[str]:
    return [str(p.payload["doc_id"]) for p in points if p.payload]


def hybrid_request(query: str, vector: Vector, k: int) -> edge.QueryRequest:
    """Dense and BM25 prefetches fused by RRF; dense alone when no query word is left."""
    dense = edge.Query.Nearest(vector.tolist(), using=DENSE)
    indices, values = SparseEncoder.query(query)
    if not indices:  # only stop words: nothing for BM25 to match
        return edge.QueryRequest(limit=k, query=dense, with_payload=["doc_id"])
    limit = max(PREFETCH, k)
    sparse = edge.Query.Nearest(edge.SparseVector(indices, values), using=SPARSE)
    return edge.QueryRequest(
        limit=k,
        prefetches=[
            edge.Prefetch(limit=limit, query=dense),
            edge.Prefetch(limit=limit, query=sparse),
        ],
        query=edge.Fusion.Rrf(k=RRF_K),
        with_payload=["doc_id"],
    )


class QdrantEdgePeer:
    """Hybrid dense + BM25 sparse search in Qdrant Edge, one shard per tenant."""

    name = "qdrant_edge"

    def __init__(self) -> None:
        self._root: Path | None = None
        self._shards: dict[str, edge.EdgeShard] = {}
        self._encoders: dict[str, SparseEncoder] = {}  # per tenant: its own average length
        self._store = RawStore()

    def version(self) -> str:
        return f"{package_version()} (embedded Rust engine)"

    def settings(self) -> dict[str, Any]:
        return {
            "mode": "Qdrant Edge: EdgeShard in process (Rust engine via PyO3), no server",
            "isolation": "an Edge shard (its own directory) per tenant, no payload filter",
            "dense": (
                f"named vector '{DENSE}', 384 floats, cosine, Edge's default storage and"
                " HNSW settings; HNSW is built by optimize() once a segment passes the"
                " default indexing threshold (smaller shards are searched exactly)"
            ),
            "sparse": (
                f"named vector '{SPARSE}': BM25 term weights computed in Python (k1={K1},"
                f" b={B}, the tenant's average document length, terms hashed by CRC-32),"
                " IDF by Edge over the shard (EdgeSparseVectorParams(modifier=Modifier.Idf))"
            ),
            "tokeniser": (
                f"lowercase, split on non-letters/digits, {len(STOP_WORDS)} English stop"
                " words dropped, no stemming (shared with the qdrant and seeds peers)"
            ),
            "query": (
                f"Query API: prefetch dense (limit {PREFETCH}) and sparse (limit {PREFETCH}),"
                f" fused in the engine by Fusion.Rrf(k={RRF_K}) (Edge requires k; 2 is the"
                " Qdrant server's default, as in the qdrant peer); dense only when the"
                " query has no word left"
            ),
            "ingest": (
                f"UpdateOperation.upsert_points in batches of {BATCH}, then"
                " EdgeShard.optimize() per touched shard (blocking; Edge has no background"
                " optimizer, so index building is inside the ingest time)"
            ),
            "storage": "Edge defaults: WAL on, vectors mmap (cached), payload on disk",
            "not_used": (
                "Edge's own Bm25 embedder and TextQuery (BM25 over a payload text index),"
                " to keep the BM25 identical to the other Qdrant peers"
            ),
        }

    def capabilities(self) -> Capabilities:
        return Capabilities(
            hybrid="yes: sparse BM25 (IDF by Edge) + dense, RRF in the engine's Query API",
            filters="yes: payload filters (match, range, datetime, geo, text), payload indexes",
            transactions="no: update operations go through a WAL one by one, no transactions",
            isolation="yes: a shard (directory) per tenant (a tenant payload filter also works)",
            temporal="no: datetime payloads can be filtered, no validity intervals",
            graph="no",
        )

    def open(self, workdir: Path) -> None:
        self._root = workdir / "qdrant_edge"

    def ingest(self, docs: list[Doc]) -> None:
        self._store.remember(docs)
        for tenant, group in by_tenant(docs).items():
            shard = self._shard(tenant)
            encoder = self._encoders[tenant]
            encoder.fit([doc.text for doc in group])
            for start in range(0, len(group), BATCH):
                points = [point(encoder, doc) for doc in group[start : start + BATCH]]
                shard.update(edge.UpdateOperation.upsert_points(points))
            shard.optimize()

    def _shard(self, tenant: str) -> edge.EdgeShard:
        """The tenant's shard, created empty on first use."""
        assert self._root is not None, "open() first"
        if tenant not in self._shards:
            path = shard_dir(self._root, tenant)
            path.mkdir(parents=True, exist_ok=True)
            self._shards[tenant] = edge.EdgeShard.create(str(path), config())
            self._encoders[tenant] = SparseEncoder()
        return self._shards[tenant]

    def search(self, tenant: str, query: str, vector: Vector, k: int) -> list[Hit]:
        shard = self._shards.get(tenant)
        if shard is None:
            return []
        return self._store.hits(doc_ids(shard.query(hybrid_request(query, vector, k))))

    def close(self) -> None:
        for shard in self._shards.values():
            shard.close()
        self._shards.clear()
        self._encoders.clear()


def make() -> list[Peer]:
    require()
    return [QdrantEdgePeer()]
