"""mcp-memory-service with its sqlite-vec backend, used in process through its storage API
(``SqliteVecMemoryStorage``: ``store_batch`` to write, ``search_memories`` to search), the
layer its MCP tools and HTTP API call.

Its search modes (12.4.0): semantic (the tools' default: sqlite-vec cosine KNN), exact
(substring), ranked (semantic re-ordered by recency, access count and quality) and hybrid:
BM25 over an FTS5 trigram index, each of the query's words of 3+ letters OR-ed, fused with
the vector hits by a weighted average (0.3 keyword + 0.7 semantic; RRF is an option).
For a question, hybrid is its best mode, and the one used here. The optional cross-encoder
rerank needs a model that cannot be downloaded here, and is off by default anyway.

Its embedding models (ONNX or sentence-transformers MiniLM) cannot be downloaded here; after
``initialize()`` the storage's model is replaced by one that answers each text with the
runner's all-MiniLM-L6-v2 vector for it (the same model the service defaults to).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks.peers.base import Capabilities, Doc, Hit, RawStore, Unavailable, Vector, by_tenant

os.environ.setdefault("MCP_MEMORY_STORAGE_BACKEND", "sqlite_vec")
# No ONNX model download attempt, and the package's default data directory (created at
# import) kept out of the home directory; each tenant's database is under the workdir.
os.environ.setdefault("MCP_MEMORY_USE_ONNX", "0")
os.environ.setdefault(
    "MCP_MEMORY_BASE_DIR", str(Path(tempfile.gettempdir()) / "elephant-peers-mcp-memory")
)

try:
    from mcp_memory_service.models.memory import Memory
    from mcp_memory_service.storage.sqlite_vec import SqliteVecMemoryStorage
    from mcp_memory_service.utils.hashing import generate_content_hash
except ImportError as exc:  # the peers venv is missing it
    SqliteVecMemoryStorage = None
    _IMPORT_ERROR = str(exc)

try:
    import pysqlite3.dbapi2 as _sqlite_with_extensions
except ImportError:
    _sqlite_with_extensions = None


def _can_load_extensions() -> bool:
    """Whether this Python's own sqlite3 may load sqlite-vec (pyenv builds often may not)."""
    connection = sqlite3.connect(":memory:")
    try:
        connection.enable_load_extension(True)
    except (AttributeError, sqlite3.OperationalError):
        return False
    finally:
        connection.close()
    return True


def _give_sqlite_with_extensions() -> None:
    """Point the package's modules at pysqlite3 (the same DB-API, built with extension
    loading), the usual fix for a Python whose sqlite3 cannot load extensions; the rest of
    the process keeps the standard module."""
    for name, module in list(sys.modules.items()):
        if name.startswith("mcp_memory_service") and getattr(module, "sqlite3", None) is sqlite3:
            module.sqlite3 = _sqlite_with_extensions


_MODEL = "all-MiniLM-L6-v2"
_BATCH = 1000  # memories per store_batch call (one transaction each)


class _GivenVectors:
    """The storage's embedding model: each text's vector is the one the runner gave."""

    def __init__(self) -> None:
        self._by_text: dict[str, Vector] = {}

    def give(self, text: str, vector: Vector) -> None:
        self._by_text[text] = vector

    def encode(self, texts: list[str], convert_to_numpy: bool = False) -> npt.NDArray[np.float32]:
        missing = [text for text in texts if text not in self._by_text]
        if missing:
            raise LookupError(
                f"mcp-memory-service asked to embed a text it was not given: {missing[0][:80]!r}"
            )
        return np.stack([self._by_text[text] for text in texts])


def _analyze(storage: Any) -> None:
    """Give SQLite's planner table statistics, which the package never gathers. Without
    them SQLite 3.51 (the one pysqlite3-binary bundles) runs the BM25 query as a loop over
    ``memories`` re-running the FTS5 match per row (seconds per search at 1,000 rows);
    with them, or on SQLite 3.40, it matches once and joins by rowid."""
    storage.conn.execute("ANALYZE")
    storage.conn.commit()


class McpMemoryServicePeer:
    name = "mcp_memory_service"

    def __init__(self) -> None:
        self._loop: asyncio.Runner | None = None
        self._workdir = Path()
        self._stores: dict[str, Any] = {}
        self._vectors = _GivenVectors()
        self._raw = RawStore()

    def version(self) -> str:
        return (
            f"mcp-memory-service {metadata.version('mcp-memory-service')}, "
            f"sqlite-vec {metadata.version('sqlite-vec')}"
        )

    def settings(self) -> dict[str, Any]:
        return {
            "api": "SqliteVecMemoryStorage (async) in process, one asyncio runner",
            "storage": "sqlite-vec backend: vec0 table, cosine, exact KNN; FTS5 trigram index",
            "tenants": "one SQLite database file per tenant under workdir",
            "ingest": f"store_batch, {_BATCH} memories per call (one transaction each); "
            "doc id in metadata. store_batch skips the semantic dedup that store() applies "
            "(cosine >= 0.85 within 24 h), which would drop overlapping LoCoMo windows",
            "search": "search_memories(query, mode='hybrid', limit=k): BM25 (FTS5, query "
            "words OR-ed) + vector, weighted average 0.3/0.7, each side fetching 2k",
            "embedder": f"the runner's {_MODEL} vectors looked up by text, replacing the "
            "storage's model after initialize() (ONNX/sentence-transformers models cannot be "
            "downloaded here); an unknown text raises",
            "planner statistics": "ANALYZE after each ingest (not done by the package): "
            "without statistics SQLite 3.51 plans the BM25 join as an FTS5 match per "
            "memories row, ~4-5 s per search at 1,000 memories, unusable at 20k",
            "sqlite": "pysqlite3-binary (SQLite 3.51.1) in place of this Python's sqlite3, "
            "which cannot load extensions (pyenv build); only inside the package's modules",
            "side effects kept": "each search records access metadata on the rows it returns "
            "(a write per search), as the product does",
            "rerank": "off (default; its cross-encoder model cannot be downloaded here)",
        }

    def capabilities(self) -> Capabilities:
        return Capabilities(
            hybrid="yes: FTS5 BM25 + sqlite-vec, weighted average (or RRF)",
            filters="yes: tags, time range (also natural-language), memory type, agent id",
            transactions="partly: store_batch writes a batch in one SQLite transaction",
            isolation="a database file per tenant (it also has 'store' partitions in one "
            "file, but their BM25 half is filtered only after ranking)",
            temporal="partly: superseded_by links and contradiction detection close old "
            "memories, no validity intervals",
            graph="partly: typed memory-to-memory relations, not used by this search",
        )

    def open(self, workdir: Path) -> None:
        self._loop = asyncio.Runner()
        self._workdir = workdir

    def _tenant(self, tenant: str) -> Any:
        """The tenant's storage, created (and its embedder replaced) on first use."""
        if tenant not in self._stores:
            assert self._loop is not None
            path = self._workdir / f"{tenant}.db"
            storage = SqliteVecMemoryStorage(str(path), embedding_model=_MODEL)
            self._loop.run(storage.initialize())
            storage.embedding_model = self._vectors
            storage.embedding_backend_degraded = False
            storage._embedding_cache_namespace = _MODEL
            self._stores[tenant] = storage
        return self._stores[tenant]

    def ingest(self, docs: list[Doc]) -> None:
        assert self._loop is not None
        self._raw.remember(docs)
        for tenant, group in by_tenant(docs).items():
            storage = self._tenant(tenant)
            for start in range(0, len(group), _BATCH):
                batch = group[start : start + _BATCH]
                for doc in batch:
                    self._vectors.give(doc.text, doc.vector)
                memories = [
                    Memory(
                        content=doc.text,
                        content_hash=generate_content_hash(doc.text),
                        metadata={"doc_id": doc.id},
                    )
                    for doc in batch
                ]
                results = self._loop.run(storage.store_batch(memories))
                failed = [message for ok, message in results if not ok]
                if failed:
                    raise RuntimeError(f"{len(failed)} memories not stored: {failed[0]}")
            _analyze(storage)

    def search(self, tenant: str, query: str, vector: Vector, k: int) -> list[Hit]:
        assert self._loop is not None
        if tenant not in self._stores:
            return []
        self._vectors.give(query, vector)
        found = self._loop.run(
            self._stores[tenant].search_memories(query=query, mode="hybrid", limit=k)
        )
        if "error" in found:
            raise RuntimeError(f"mcp-memory-service search failed: {found['error']}")
        return self._raw.hits([row["doc_id"] for row in found["memories"]])

    def close(self) -> None:
        if self._loop is None:
            return
        for storage in self._stores.values():
            self._loop.run(storage.close())
        self._stores.clear()
        self._loop.close()
        self._loop = None


def make() -> list[McpMemoryServicePeer]:
    if SqliteVecMemoryStorage is None:
        raise Unavailable(f"mcp-memory-service is not installed in this venv: {_IMPORT_ERROR}")
    if not _can_load_extensions():
        if _sqlite_with_extensions is None:
            raise Unavailable(
                "this Python's sqlite3 cannot load extensions (sqlite-vec) and "
                "pysqlite3-binary is not installed"
            )
        _give_sqlite_with_extensions()
    return [McpMemoryServicePeer()]
