"""langchain-postgres's ``PGVectorStore`` (the v2 store on ``PGEngine``; the older
``PGVector`` class is deprecated in its favour): the vector store a LangChain team on
Postgres reaches for, on Elephant's own embedded server (``_postgres.py``), a database
of its own, a table per tenant.

It has a hybrid mode (``HybridSearchConfig``, since 0.0.15): a ``tsvector`` column filled
at insert (``to_tsvector('pg_catalog.english', content)``, with a GIN index), and per
search two statements, the dense one (``ORDER BY embedding <=> q LIMIT primary_top_k``)
and the keyword one (``WHERE tsv @@ plainto_tsquery(...) ORDER BY ts_rank_cd(...) LIMIT
secondary_top_k``), fused in Python by ``reciprocal_rank_fusion`` (or, at its default,
a weighted sum of min-max normalised scores). Postgres full text ranks by ``ts_rank_cd``
(cover density), not BM25. Both modes are measured on the same tables:

- ``langchain_pg``: hybrid, RRF (rrf_k=60), each leg fetching k;
- ``langchain_pg-dense``: ``similarity_search`` without the hybrid config.

langchain-postgres 0.0.19 writes the query into the ``HybridSearchConfig`` it is given
(``fts_query``) on the first search, so every later search on that store would keyword-
search the first query's text (langchain-ai/langchain-postgres#337, open). A fresh config
per search, which its API takes as a keyword argument, avoids that.

The runner's vectors reach it through a LangChain ``Embeddings`` that answers each text
with the vector given for it (no model; an unknown text raises). Rows go in through
``add_embeddings`` (the given vectors; the store writes a row per statement and commits
each), then an HNSW index (pgvector, cosine, m=16, ef_construction=64, langchain-postgres'
``HNSWIndex`` defaults) and the GIN index are built, inside the timed ingest.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.peers import _postgres
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
    from langchain_core.embeddings import Embeddings
    from langchain_postgres import PGEngine, PGVectorStore
    from langchain_postgres.v2.hybrid_search_config import (
        HybridSearchConfig,
        reciprocal_rank_fusion,
    )
    from langchain_postgres.v2.indexes import HNSWIndex, HNSWQueryOptions

    IMPORT_ERROR = ""
except ImportError as exc:  # the peers venv lacks it: make() says so
    IMPORT_ERROR = str(exc)
    Embeddings = object  # type: ignore[assignment,misc]

DIMS = 384
TSV = "content_tsv"
RRF_K = 60
BATCH = 1000  # texts per add_embeddings call (the store still inserts row by row)
# pgvector's HNSW returns at most hnsw.ef_search rows (default 40): the LoCoMo searches ask
# for 60, so the store sets it for its searches through its own HNSWQueryOptions.
EF_SEARCH = 100


class GivenVectors(Embeddings):  # type: ignore[misc,valid-type]
    """A LangChain Embeddings answering each text with the vector the runner gave for it."""

    def __init__(self) -> None:
        self.by_text: dict[str, Vector] = {}

    def give(self, text: str, vector: Vector) -> None:
        self.by_text[text] = vector

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        vector = self.by_text.get(text)
        if vector is None:
            raise LookupError(
                f"langchain-postgres asked to embed a text it was not given: {text!r}"
            )
        return [float(x) for x in vector]

    # The base class would run these on a thread pool: a lookup needs no thread.
    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)


def table_name(tenant: str) -> str:
    """A table per tenant: lower-case identifier characters, unique by a digest."""
    safe = re.sub(r"[^a-z0-9_]", "_", tenant.lower())[:40]
    digest = hashlib.sha1(tenant.encode(), usedforsecurity=False).hexdigest()[:8]
    return f"t_{safe}_{digest}"


def row_id(doc_id: str) -> str:
    """The store's id column is a UUID at its default: one derived from the document id."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, doc_id))


def hybrid_config(table: str, query: str = "", k: int = 4) -> Any:
    """Dense + tsvector legs of k rows each, fused by reciprocal rank (k=60)."""
    return HybridSearchConfig(
        tsv_column=TSV,
        tsv_lang="pg_catalog.english",
        fts_query=query,
        fusion_function=reciprocal_rank_fusion,
        fusion_function_parameters={"rrf_k": RRF_K},
        primary_top_k=k,
        secondary_top_k=k,
        index_name=f"{table}_tsv_idx",
        index_type="GIN",
    )


class LangChainPGPeer:
    """Tables, indexes and the hybrid search (``hybrid``), or dense search over the tables
    of the hybrid peer (``shares_data_with``)."""

    def __init__(self, name: str, hybrid: bool, owner: LangChainPGPeer | None = None) -> None:
        self.name = name
        self.hybrid = hybrid
        self.owner = owner
        self.shares_data_with: str | None = owner.name if owner is not None else None
        self._engine: Any = None
        self._conninfo: str | None = None
        self._stores: dict[str, Any] = {}
        self._vectors = GivenVectors()
        self._raw = RawStore()
        self._ids: dict[str, str] = {}  # row id -> doc id

    def version(self) -> str:
        return (
            f"langchain-postgres {metadata.version('langchain-postgres')} "
            f"(langchain-core {metadata.version('langchain-core')}, SQLAlchemy "
            f"{metadata.version('sqlalchemy')}, psycopg {metadata.version('psycopg')}), "
            f"{_postgres.describe()}"
        )

    def settings(self) -> dict[str, Any]:
        search = (
            "similarity_search(question, k, hybrid_search_config=a fresh HybridSearchConfig("
            f"tsv_column='{TSV}', tsv_lang='pg_catalog.english', fusion_function="
            f"reciprocal_rank_fusion, fusion_function_parameters={{'rrf_k': {RRF_K}}}, "
            "primary_top_k=k, secondary_top_k=k)): a dense statement and a keyword "
            "statement (plainto_tsquery, ts_rank_cd, GIN), one after the other, fused in "
            "Python. A fresh config per search: 0.0.19 keeps the first query in a shared "
            "config (langchain-ai/langchain-postgres#337)"
            if self.hybrid
            else "similarity_search(question, k) without hybrid config: one dense statement "
            "(ORDER BY embedding <=> q LIMIT k), on the tables of langchain_pg"
        )
        return {
            "api": "langchain_postgres.PGVectorStore (v2) over PGEngine.from_connection_string"
            "('postgresql+psycopg://...'), sync methods (run on the engine's background "
            "event loop)",
            "server": "Elephant's embedded PostgreSQL (the same server, a database of its "
            "own per run and size)",
            "tenancy": "a table per tenant (init_vectorstore_table), not a metadata filter",
            "table": "langchain_id uuid (uuid5 of the doc id), content text, embedding "
            f"vector(384), {TSV} tsvector (hybrid config at creation), langchain_metadata json",
            "index": "HNSWIndex() at langchain-postgres' defaults (pgvector HNSW, cosine, m=16, "
            f"ef_construction=64) built after the rows; HNSWQueryOptions(ef_search={EF_SEARCH}) "
            f"(SET LOCAL before each dense statement; pgvector's 40 would cut a top-60); "
            "GIN on the tsvector column (apply_hybrid_search_index)",
            "embedding_service": "a LangChain Embeddings answering the runner's MiniLM vector "
            "for each text (an unknown text raises): no model runs",
            "ingest": f"add_embeddings(texts, vectors, ids) in batches of {BATCH} (the store "
            "inserts and commits row by row), then the HNSW and GIN indexes",
            "search": search,
        }

    def capabilities(self) -> Capabilities:
        return Capabilities(
            hybrid="yes: tsvector (ts_rank_cd, not BM25) + pgvector, two statements fused in "
            "Python (RRF or weighted sum)"
            if self.hybrid
            else "no in this mode (the store has a hybrid mode: langchain_pg)",
            filters="yes: metadata filters ($eq, $in, $gt, $like, $and/$or ...) in SQL",
            transactions="partly: PostgreSQL underneath, but the store commits each row "
            "on its own; no multi-call transaction in its API",
            isolation="a table per tenant (or a metadata filter); no row-level security",
            temporal="no",
            graph="no",
        )

    def open(self, workdir: Path) -> None:
        if self.owner is not None:  # the hybrid peer's tables, searched densely
            return
        self._conninfo = _postgres.create(self.name)
        self._engine = PGEngine.from_connection_string(_postgres.sqlalchemy_url(self._conninfo))
        self._stores = {}
        self._raw = RawStore()
        self._ids = {}

    def _store(self, tenant: str) -> Any:
        if tenant not in self._stores:
            table = table_name(tenant)
            self._engine.init_vectorstore_table(
                table, DIMS, hybrid_search_config=hybrid_config(table)
            )
            self._stores[tenant] = PGVectorStore.create_sync(
                self._engine,
                self._vectors,
                table,
                index_query_options=HNSWQueryOptions(ef_search=EF_SEARCH),
                hybrid_search_config=hybrid_config(table),
            )
        return self._stores[tenant]

    def ingest(self, docs: list[Doc]) -> None:
        assert self.owner is None, "the dense peer searches the hybrid peer's tables"
        self._raw.remember(docs)
        for tenant, group in by_tenant(docs).items():
            store = self._store(tenant)
            for start in range(0, len(group), BATCH):
                part = group[start : start + BATCH]
                ids = [row_id(doc.id) for doc in part]
                self._ids.update(zip(ids, (doc.id for doc in part), strict=True))
                store.add_embeddings(
                    [doc.text for doc in part], [doc.vector.tolist() for doc in part], ids=ids
                )
            store.apply_vector_index(HNSWIndex())
            store.apply_hybrid_search_index()

    def search(self, tenant: str, query: str, vector: Vector, k: int) -> list[Hit]:
        owner = self.owner or self
        store = owner._stores.get(tenant)
        if store is None:
            return []
        owner._vectors.give(query, vector)
        if self.hybrid and query.strip():
            config = hybrid_config(table_name(tenant), query, k)
            found = store.similarity_search(query, k=k, hybrid_search_config=config)
        else:
            found = store.similarity_search(query, k=k, hybrid_search_config=None)
        return owner._raw.hits([owner._ids.get(str(doc.id), str(doc.id)) for doc in found])

    def close(self) -> None:
        if self.owner is not None:
            return
        if self._engine is not None:
            self._engine._run_as_sync(self._engine.close())
            self._engine = None
        self._stores = {}
        if self._conninfo is not None:
            _postgres.drop(self._conninfo)
            self._conninfo = None


def make() -> list[Peer]:
    if IMPORT_ERROR:
        raise Unavailable(f"langchain-postgres cannot be imported: {IMPORT_ERROR}")
    hybrid = LangChainPGPeer("langchain_pg", hybrid=True)
    return [hybrid, LangChainPGPeer("langchain_pg-dense", hybrid=False, owner=hybrid)]
