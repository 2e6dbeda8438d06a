"""The "seeds-style pipeline": dense search in Qdrant local mode, BM25 in an SQLite FTS5
sidecar, the two lists fused by Reciprocal Rank Fusion (k=60) in Python.

This is the architecture Elephant's first prototype used, kept as a peer to show what
moving into Postgres changed. Both stores live in process under the run's directory; no
transaction spans them.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from benchmarks.peers import qdrant as q
from benchmarks.peers._bm25 import STOP_WORDS, query_terms
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

RRF_K = 60
DEPTH = 100  # candidates taken from each list before fusion, at least k

_SCHEMA = "CREATE VIRTUAL TABLE memories USING fts5(text, tenant UNINDEXED, doc_id UNINDEXED)"
_SEARCH = (
    "SELECT doc_id FROM memories WHERE memories MATCH ? AND tenant = ?"
    " ORDER BY bm25(memories) LIMIT ?"
)


def fts_query(text: str) -> str:
    """The query's words OR-ed, each a quoted FTS5 string so no word acts as syntax."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in query_terms(text))


def rrf(rankings: list[list[str]], k: int = RRF_K) -> list[str]:
    """Reciprocal Rank Fusion: each list adds 1 / (k + rank) to a document, rank from 1."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc_id in enumerate(ranking, start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=scores.__getitem__, reverse=True)


class SeedsPeer:
    """Qdrant holds the vectors, FTS5 the text; every document is written to both."""

    name = "seeds"
    # qdrant-client's local mode is pure Python (point-by-point commits, brute-force
    # search; the client warns against it past 20,000 points): 100k is Qdrant Edge's.
    max_docs = 20_000
    max_docs_reason = (
        "measured to 20k only: qdrant-client's local mode is pure Python (brute-force "
        "search, point-by-point commits) and warns past 20,000 points; see qdrant_edge"
    )

    def __init__(self) -> None:
        self._client: q.QdrantClient | None = None
        self._db: sqlite3.Connection | None = None
        self._tenants: set[str] = set()
        self._store = RawStore()

    def version(self) -> str:
        return f"{q.package_version()} (local mode) + SQLite {sqlite3.sqlite_version} FTS5"

    def settings(self) -> dict[str, Any]:
        return q.SETTINGS_COMMON | {
            "bm25": (
                "SQLite FTS5 table (text, tenant UNINDEXED, doc_id UNINDEXED), default"
                " unicode61 tokenizer, ranked by bm25() (k1=1.2, b=0.75 built in), tenant by"
                " WHERE (statistics over every tenant's rows)"
            ),
            "bm25_query": (
                f"the query's words (lowercase, {len(STOP_WORDS)} English stop words dropped;"
                " the tokeniser qdrant.py uses) quoted and OR-ed"
            ),
            "fusion": (
                f"RRF in Python, k={RRF_K}, over the top {DEPTH} of each list; dense only"
                " when the query has no word left"
            ),
            "ingest_fts5": "executemany in one SQLite transaction, after the Qdrant upserts",
        }

    def capabilities(self) -> Capabilities:
        return Capabilities(
            hybrid=f"yes: Qdrant dense + SQLite FTS5 bm25(), RRF (k={RRF_K}) in Python",
            filters="partly: Qdrant payload filters and SQL WHERE, kept in step by hand",
            transactions="no: two stores written one after the other, no shared transaction",
            isolation="partly: a Qdrant collection per tenant, a tenant column in FTS5",
            temporal="no",
            graph="no",
        )

    def open(self, workdir: Path) -> None:
        self._client = q.open_client(workdir)
        self._tenants = set()
        self._db = sqlite3.connect(workdir / "fts.sqlite3")
        self._db.execute(_SCHEMA)

    def ingest(self, docs: list[Doc]) -> None:
        assert self._client is not None and self._db is not None, "open() first"
        self._store.remember(docs)
        for tenant, group in by_tenant(docs).items():
            if tenant not in self._tenants:
                self._client.create_collection(
                    q.collection(tenant), vectors_config=q.dense_params()
                )
                self._tenants.add(tenant)
            points = [
                q.models.PointStruct(
                    id=q.point_id(doc.id),
                    vector={q.DENSE: doc.vector.tolist()},
                    payload=q.payload(doc),
                )
                for doc in group
            ]
            q.upsert(self._client, q.collection(tenant), points)
        with self._db:
            self._db.executemany(
                "INSERT INTO memories (text, tenant, doc_id) VALUES (?, ?, ?)",
                [(doc.text, doc.tenant, doc.id) for doc in docs],
            )

    def search(self, tenant: str, query: str, vector: Vector, k: int) -> list[Hit]:
        assert self._client is not None and self._db is not None, "open() first"
        if tenant not in self._tenants:
            return []
        depth = max(DEPTH, k)
        dense = self._client.query_points(
            q.collection(tenant), query=vector.tolist(), using=q.DENSE, limit=depth,
            with_payload=["doc_id"],
        )  # fmt: skip
        rankings = [q.doc_ids(dense.points)]
        match = fts_query(query)
        if match:
            rows = self._db.execute(_SEARCH, (match, tenant, depth)).fetchall()
            rankings.append([row[0] for row in rows])
        return self._store.hits(rrf(rankings)[:k])

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._db is not None:
            self._db.close()
            self._db = None


def require_fts5() -> None:
    """Raise Unavailable when this Python's SQLite was built without FTS5."""
    try:
        sqlite3.connect(":memory:").execute("CREATE VIRTUAL TABLE probe USING fts5(text)")
    except sqlite3.OperationalError as exc:
        raise Unavailable(f"SQLite {sqlite3.sqlite_version} has no FTS5: {exc}") from exc


def make() -> list[Peer]:
    q.require()
    require_fts5()
    return [SeedsPeer()]
