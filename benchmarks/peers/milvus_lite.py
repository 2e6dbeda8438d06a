"""Milvus Lite (pymilvus + milvus-lite): Milvus's local mode, ``MilvusClient("<file>.db")``
with no server to run, and hybrid search as Milvus documents it: a dense vector and a
BM25 sparse vector that Milvus computes from the text itself (a ``Function`` of type
BM25 over an analyzed VARCHAR field), each searched by an ``AnnSearchRequest`` and fused
by ``RRFRanker(60)`` in ``hybrid_search``.

milvus-lite 3.x is a rewrite in pure Python (the 2.x wheels wrapped the C++ Milvus core):
an LSM-style engine (WAL, memtable, Parquet segments) with FAISS indexes per segment,
served to pymilvus over gRPC on loopback from threads inside this process. ``AUTOINDEX``
on the dense field is FAISS HNSW there (M=16, efConstruction=200, ef=64); the sparse
field gets ``SPARSE_INVERTED_INDEX`` with metric BM25. The analyzer is its standard one
(``\\w+``, lower case, no stop words, no stemming).

A ``flush`` persists the inserted rows and hands compaction and index building to a
background thread; a search during that work competes with it for the interpreter. The
ingest therefore waits for that thread to finish (through the collection's private
``_wait_for_bg``: pymilvus has no call for it and ``compact()`` is a no-op in Lite), so the
maintenance is counted in ingest, as Qdrant Edge's ``optimize()`` is.

A collection per tenant (Milvus also offers partition keys for many tenants).
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
    Peer,
    RawStore,
    Unavailable,
    Vector,
    by_tenant,
)

try:
    from milvus_lite.server_manager import server_manager_instance
    from pymilvus import (
        AnnSearchRequest,
        DataType,
        Function,
        FunctionType,
        MilvusClient,
        RRFRanker,
    )

    IMPORT_ERROR = ""
except ImportError as exc:  # the peers venv lacks it: make() says so
    IMPORT_ERROR = str(exc)

DIMS = 384
RRF_K = 60
BATCH = 1000  # rows per insert call
DENSE, SPARSE = "dense", "sparse"


def collection_name(tenant: str) -> str:
    """Milvus names: letters, digits and underscores, a letter first; unique by a digest."""
    safe = re.sub(r"[^A-Za-z0-9_]", "_", tenant)[:40]
    digest = hashlib.sha1(tenant.encode(), usedforsecurity=False).hexdigest()[:8]
    return f"t_{safe}_{digest}"


class MilvusLitePeer:
    name = "milvus_lite"

    def __init__(self) -> None:
        self._client: Any = None
        self._path: str | None = None
        self._collections: set[str] = set()
        self._raw = RawStore()

    def version(self) -> str:
        return (
            f"pymilvus {metadata.version('pymilvus')}, milvus-lite "
            f"{metadata.version('milvus-lite')} (faiss-cpu {metadata.version('faiss-cpu')})"
        )

    def settings(self) -> dict[str, Any]:
        return {
            "mode": "MilvusClient('<workdir>/milvus.db'): Milvus Lite, its engine in this "
            "process (pure Python, FAISS), pymilvus talking gRPC to it on 127.0.0.1",
            "tenancy": "a collection per tenant",
            "schema": "id VARCHAR primary key, text VARCHAR (enable_analyzer, standard "
            "analyzer), dense FLOAT_VECTOR(384), sparse SPARSE_FLOAT_VECTOR filled by a BM25 "
            "Function over text",
            "index": "dense: AUTOINDEX, metric COSINE (FAISS HNSW in Lite: M=16, "
            "efConstruction=200, ef=64); sparse: SPARSE_INVERTED_INDEX, metric BM25 (its "
            "defaults k1=1.2, b=0.75)",
            "ingest": f"insert in batches of {BATCH}, flush, then wait for the background "
            "compaction and index build (private Collection._wait_for_bg; counted in ingest)",
            "search": f"hybrid_search: AnnSearchRequest(dense, COSINE, limit=k) and "
            f"AnnSearchRequest(question text, sparse, BM25, limit=k), RRFRanker({RRF_K}), "
            "limit=k; dense alone when the question is empty",
        }

    def capabilities(self) -> Capabilities:
        return Capabilities(
            hybrid="yes: BM25 sparse (computed by Milvus from the text) + dense, RRF",
            filters="yes: boolean expressions on scalar and JSON fields, partition keys",
            transactions="no: inserts and deletes are not transactional across calls",
            isolation="a collection per tenant (partition keys or databases also work)",
            temporal="no",
            graph="no",
        )

    def open(self, workdir: Path) -> None:
        self._path = str(workdir / "milvus.db")
        self._client = MilvusClient(self._path)
        self._collections = set()
        self._raw = RawStore()

    def _create(self, name: str) -> None:
        client = self._client
        schema = client.create_schema(auto_id=False)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
        schema.add_field("text", DataType.VARCHAR, max_length=65535, enable_analyzer=True)
        schema.add_field(DENSE, DataType.FLOAT_VECTOR, dim=DIMS)
        schema.add_field(SPARSE, DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(
            Function(
                name="text_bm25",
                function_type=FunctionType.BM25,
                input_field_names=["text"],
                output_field_names=[SPARSE],
            )
        )
        index = client.prepare_index_params()
        index.add_index(DENSE, index_type="AUTOINDEX", metric_type="COSINE")
        index.add_index(SPARSE, index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        client.create_collection(name, schema=schema, index_params=index)
        self._collections.add(name)

    def ingest(self, docs: list[Doc]) -> None:
        self._raw.remember(docs)
        for tenant, group in by_tenant(docs).items():
            name = collection_name(tenant)
            if name not in self._collections:
                self._create(name)
            for start in range(0, len(group), BATCH):
                rows = [
                    {"id": doc.id, "text": doc.text, DENSE: doc.vector.tolist()}
                    for doc in group[start : start + BATCH]
                ]
                self._client.insert(name, rows)
            self._client.flush(name)
            self._settle(name)

    def _settle(self, name: str) -> None:
        """Wait for the background compaction and index build of collection ``name``."""
        assert self._path is not None
        entry = server_manager_instance._servers.get(os.path.abspath(self._path))
        if entry is None:
            return
        collection = entry[1].get_collection(name)
        wait = getattr(collection, "_wait_for_bg", None)
        if wait is not None:
            wait()

    def search(self, tenant: str, query: str, vector: Vector, k: int) -> list[Hit]:
        name = collection_name(tenant)
        if name not in self._collections:
            return []
        dense = vector.tolist()
        if query.strip():
            requests = [
                AnnSearchRequest([dense], DENSE, {"metric_type": "COSINE"}, limit=k),
                AnnSearchRequest([query], SPARSE, {"metric_type": "BM25"}, limit=k),
            ]
            found = self._client.hybrid_search(
                name, requests, ranker=RRFRanker(RRF_K), limit=k, output_fields=["id"]
            )
        else:
            found = self._client.search(
                name,
                data=[dense],
                anns_field=DENSE,
                limit=k,
                search_params={"metric_type": "COSINE"},
                output_fields=["id"],
            )
        return self._raw.hits([str(hit["id"]) for hit in found[0]])

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._path is not None:
            server_manager_instance.release_server(self._path)
            self._path = None
        self._collections = set()


def make() -> list[Peer]:
    if IMPORT_ERROR:
        raise Unavailable(f"pymilvus/milvus-lite cannot be imported: {IMPORT_ERROR}")
    return [MilvusLitePeer()]
