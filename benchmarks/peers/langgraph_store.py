"""LangGraph's ``PostgresStore`` (package langgraph-checkpoint-postgres): the long-term
memory store of LangGraph agents (and of LangMem's memory tools) on Postgres + pgvector,
what a team on Postgres gets from the framework it already runs.

It runs on Elephant's own embedded server (``_postgres.py``), in a database of its own,
through ``PostgresStore.from_conn_string`` (one connection, autocommit, as its docs show)
and ``setup()``, which creates its tables (``store``: namespace prefix, key, JSON value;
``store_vectors``: one row per embedded field) and, at its default, an HNSW index
(cosine, m=16, ef_construction=64) on ``store_vectors``, before any row is written.

A tenant is a namespace (``(tenant,)``), the store's own way to keep users apart: every
tenant shares the two tables and the one HNSW index, and a search filters by namespace
prefix. The runner's vectors reach it through ``IndexConfig.embed``, a function that
answers each text with the vector given for it (no model call; an unknown text raises).

Search is dense only: ``store.search(namespace, query=..., limit=k)`` embeds the query
and orders by cosine distance; the store has no keyword or BM25 search (without a query
it lists by recency). Writes go in batches of ``PutOp`` through ``store.batch`` (one
multi-row INSERT for the items and one for their vectors per batch).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.peers import _postgres
from benchmarks.peers.base import Capabilities, Doc, Hit, RawStore, Unavailable, Vector

try:
    from langgraph.store.base import PutOp
    from langgraph.store.postgres import PostgresStore

    IMPORT_ERROR = ""
except ImportError as exc:  # the peers venv lacks it: make() says so
    IMPORT_ERROR = str(exc)

DIMS = 384
BATCH = 500  # PutOps per store.batch call


class GivenVectors:
    """``IndexConfig.embed``: each text's vector is the one the runner gave for it."""

    def __init__(self) -> None:
        self.by_text: dict[str, Vector] = {}

    def give(self, text: str, vector: Vector) -> None:
        self.by_text[text] = vector

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        missing = [text for text in texts if text not in self.by_text]
        if missing:
            raise LookupError(f"the store asked to embed a text it was not given: {missing[0]!r}")
        return [self.by_text[text].tolist() for text in texts]


class LangGraphStorePeer:
    name = "langgraph_store"

    def __init__(self) -> None:
        self._vectors = GivenVectors()
        self._stack = contextlib.ExitStack()
        self._store: Any = None
        self._conninfo: str | None = None
        self._raw = RawStore()

    def version(self) -> str:
        return (
            f"langgraph-checkpoint-postgres {metadata.version('langgraph-checkpoint-postgres')}"
            f" (langgraph-checkpoint {metadata.version('langgraph-checkpoint')}), "
            f"{_postgres.describe()}"
        )

    def index_config(self) -> dict[str, Any]:
        return {
            "dims": DIMS,
            "embed": self._vectors,
            "fields": ["text"],
            "distance_type": "cosine",
            "ann_index_config": {"kind": "hnsw", "vector_type": "vector"},
        }

    def settings(self) -> dict[str, Any]:
        return {
            "api": "langgraph.store.postgres.PostgresStore (sync), from_conn_string (one "
            "connection, autocommit, prepare_threshold=0), setup() once per database",
            "server": "Elephant's embedded PostgreSQL (the same server, a database of its "
            "own per run and size)",
            "index": "IndexConfig(dims=384, fields=['text'], distance_type='cosine', "
            "ann_index_config={'kind': 'hnsw', 'vector_type': 'vector'}): pgvector HNSW "
            "at the store's defaults (m=16, ef_construction=64), created by setup() on the "
            "empty table; hnsw.ef_search left at pgvector's default (40)",
            "embed": "IndexConfig.embed is a function answering the runner's MiniLM vector "
            "for each text (an unknown text raises): no model runs",
            "tenancy": "a namespace (tenant,) per tenant: one store table, one store_vectors "
            "table and one HNSW index for all, searches filtered by namespace prefix",
            "ingest": f"store.batch of {BATCH} PutOp(namespace=(tenant,), key=doc id, "
            "value={'text': ...}) per call",
            "search": "store.search((tenant,), query=question, limit=k): dense only, "
            "cosine; the store has no keyword search",
        }

    def capabilities(self) -> Capabilities:
        return Capabilities(
            hybrid="no: dense only (pgvector); no keyword or BM25 search",
            filters="yes: JSON value filters ($eq, $ne, $gt, $lt, ...) and namespace prefixes",
            transactions="partly: one batch runs in one pipeline/transaction; no API for "
            "multi-call transactions",
            isolation="a namespace per tenant in shared tables (a filter, no row-level security)",
            temporal="no: created/updated timestamps and an optional TTL",
            graph="no",
        )

    def open(self, workdir: Path) -> None:
        self._conninfo = _postgres.create(self.name)
        self._store = self._stack.enter_context(
            PostgresStore.from_conn_string(self._conninfo, index=self.index_config())  # type: ignore[arg-type]
        )
        self._store.setup()
        self._raw = RawStore()

    def ingest(self, docs: list[Doc]) -> None:
        self._raw.remember(docs)
        for start in range(0, len(docs), BATCH):
            part = docs[start : start + BATCH]
            for doc in part:
                self._vectors.give(doc.text, doc.vector)
            self._store.batch(
                [PutOp((doc.tenant,), doc.id, {"text": doc.text}, index=None) for doc in part]
            )

    def search(self, tenant: str, query: str, vector: Vector, k: int) -> list[Hit]:
        self._vectors.give(query, vector)
        found = self._store.search((tenant,), query=query, limit=k)
        return self._raw.hits([item.key for item in found])

    def close(self) -> None:
        self._stack.close()
        self._store = None
        if self._conninfo is not None:
            _postgres.drop(self._conninfo)
            self._conninfo = None


def make() -> list[LangGraphStorePeer]:
    if IMPORT_ERROR:
        raise Unavailable(f"langgraph-checkpoint-postgres cannot be imported: {IMPORT_ERROR}")
    return [LangGraphStorePeer()]
