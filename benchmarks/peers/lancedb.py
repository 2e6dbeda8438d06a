"""LanceDB (embedded, local directory): vector + native full-text (BM25) hybrid search
fused by its RRFReranker, the mode its docs show for this job.

A table per tenant. Vectors are searched exactly (flat, cosine) below ``INDEX_FROM``
rows: LanceDB's docs call an ANN index usually unnecessary up to ~100k rows, and at
LoCoMo size (a few hundred windows per tenant) it would only cost build time. From
there an ANN index is built, because measured here on the scale.py corpus an exact
scan of 100k rows took ~120 ms p50 (hybrid ~134 ms) against ~8 ms with an index.

Two variants, both measured at 100k: IVF_HNSW_SQ at its defaults (top-10 of the hybrid
search 0.97 the same as exact), and IVF_PQ, whose defaults keep only 0.12 of the exact
dense top-10, so it is queried with refine_factor=10 as LanceDB's docs suggest (0.95).
"""

from __future__ import annotations

import hashlib
import os
import re
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.peers.base import (
    Capabilities,
    Doc,
    Hit,
    RawStore,
    Unavailable,
    Vector,
    by_tenant,
)

# The hybrid legs select columns without _score/_distance, and lance then warns on every
# query that this autoprojection will change. Errors still show.
os.environ.setdefault("LANCEDB_LOG", "error")

try:
    import lancedb
    import pyarrow as pa
    from lancedb.index import HnswSq, IvfPq
    from lancedb.rerankers import RRFReranker

    IMPORT_ERROR = ""
except ImportError as exc:  # the peers venv lacks it: make() says so
    IMPORT_ERROR = str(exc)

DIM = 384
INDEX_FROM = 50_000  # rows from which a tenant's table gets its ANN index
REFINE_FACTOR = 10  # IVF_PQ only: re-rank 10k candidates by exact distance


def table_name(tenant: str) -> str:
    """Table names are directory names: keep them to [A-Za-z0-9_-] and unique."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "-", tenant)[:40]
    digest = hashlib.sha1(tenant.encode(), usedforsecurity=False).hexdigest()[:8]
    return f"t-{safe}-{digest}"


def arrow_batch(docs: list[Doc]) -> Any:
    """One Arrow table (id, text, vector) so that a whole tenant is written at once."""
    flat = np.concatenate([d.vector.astype(np.float32) for d in docs])
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(flat, type=pa.float32()), DIM)
    return pa.table(
        {
            "id": pa.array([d.id for d in docs], type=pa.string()),
            "text": pa.array([d.text for d in docs], type=pa.string()),
            "vector": vectors,
        }
    )


class LanceDBPeer:
    """One local database under the workdir; per tenant a table with a native FTS index
    and, from ``index_from`` rows, an ANN index of the kind ``index`` names."""

    def __init__(self, name: str, index: str, index_from: int = INDEX_FROM) -> None:
        self.name = name
        self._index = index  # "IVF_HNSW_SQ" or "IVF_PQ"
        self._index_from = index_from
        self._db: Any = None
        self._tables: dict[str, Any] = {}
        self._indexed: set[str] = set()
        self._store = RawStore()
        self._reranker: Any = None

    def version(self) -> str:
        return f"lancedb {metadata.version('lancedb')} (pyarrow {metadata.version('pyarrow')})"

    def settings(self) -> dict[str, Any]:
        refine = f", queried with refine_factor={REFINE_FACTOR}" if self._index == "IVF_PQ" else ""
        return {
            "storage": "lancedb.connect(workdir/lancedb): embedded, Lance files on local disk",
            "tenancy": "a table per tenant (not one table with a tenant column filter)",
            "schema": "id string, text string, vector fixed_size_list<float32>[384]",
            "full_text": "native FTS index on text (create_fts_index at its defaults: simple "
            "tokenizer, lower case, English stemming, stop words removed, ascii folding; "
            "BM25 scoring)",
            "vector_search": f"cosine distance; exact (flat) scan below {self._index_from:,} "
            f"rows per table (so LoCoMo and the 20k run are exact), from there an "
            f"{self._index} index (cosine, LanceDB's default partitions/sub-vectors/"
            f"nprobes{refine})",
            "search": "table.search(query_type='hybrid').vector(v).text(q)"
            ".distance_type('cosine').rerank(RRFReranker(K=60)).limit(k): each leg "
            "fetches k rows, fused by reciprocal rank (an empty query: the vector leg)",
            "ingest": "one table.add of an Arrow batch per tenant, then the FTS index "
            "(and the ANN index where due) built, all inside the timed ingest",
            "telemetry": "none in the embedded client",
        }

    def capabilities(self) -> Capabilities:
        return Capabilities(
            hybrid="yes: native BM25 full-text index + vector, fused by RRFReranker",
            filters="yes: SQL-like where() on any column, pre- or post-filter",
            transactions="partly: each add/merge_insert is an atomic versioned commit; "
            "no multi-statement transaction",
            isolation="a table per tenant (one table with a where filter also works)",
            temporal="no (table versions give time travel of the data, not fact validity)",
            graph="no",
        )

    def open(self, workdir: Path) -> None:
        self._db = lancedb.connect(str(workdir / "lancedb"))
        self._tables = {}
        self._indexed = set()
        self._store = RawStore()
        self._reranker = RRFReranker(K=60)

    def ingest(self, docs: list[Doc]) -> None:
        self._store.remember(docs)
        for tenant, group in by_tenant(docs).items():
            data = arrow_batch(group)
            table = self._tables.get(tenant)
            if table is None:
                table = self._db.create_table(table_name(tenant), data=data)
                self._tables[tenant] = table
            else:
                table.add(data)
            self._build_indexes(tenant, table)

    def _build_indexes(self, tenant: str, table: Any) -> None:
        """FTS always (hybrid needs it); the ANN index only on big tables."""
        table.create_fts_index("text", replace=True)
        if table.count_rows() < self._index_from:
            return
        config = (
            IvfPq(distance_type="cosine")
            if self._index == "IVF_PQ"
            else HnswSq(distance_type="cosine")
        )
        table.create_index("vector", config=config, replace=True)
        self._indexed.add(tenant)

    def search(self, tenant: str, query: str, vector: Vector, k: int) -> list[Hit]:
        table = self._tables.get(tenant)
        if table is None:
            return []
        if query.strip():
            builder = (
                table.search(query_type="hybrid", vector_column_name="vector", fts_columns="text")
                .vector(vector)
                .text(query)
                .distance_type("cosine")
                .rerank(self._reranker)
            )
        else:  # hybrid refuses an empty text: the vector leg alone
            builder = table.search(vector, vector_column_name="vector").distance_type("cosine")
        if self._index == "IVF_PQ" and tenant in self._indexed:
            builder = builder.refine_factor(REFINE_FACTOR)
        found = builder.select(["id"]).limit(k).to_arrow()
        return self._store.hits(found["id"].to_pylist())

    def close(self) -> None:
        self._tables = {}
        self._db = None


def make() -> list[LanceDBPeer]:
    if IMPORT_ERROR:
        raise Unavailable(f"lancedb cannot be imported: {IMPORT_ERROR}")
    return [LanceDBPeer("lancedb", "IVF_HNSW_SQ"), LanceDBPeer("lancedb-ivfpq", "IVF_PQ")]
