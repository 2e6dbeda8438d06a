"""mem0 OSS (package mem0ai) as a user runs it in process: ``Memory`` over its local,
embedded Qdrant (a directory under the workdir, no server) and its SQLite history db.

Documents go in raw with ``add(text, user_id=tenant, infer=False)``, so no LLM extracts
facts; the runner's MiniLM vectors reach mem0 through an embedder that answers each
text with the vector given for it, and an LLM object that raises if mem0 ever calls it.

What mem0 2.2.1's ``search`` does beyond dense similarity, read from its source:
it always over-fetches ``max(4k, 60)`` dense candidates, then adds to each a BM25 score
(Qdrant sparse vectors from fastembed's ``Qdrant/bm25``, text lemmatised by spaCy) and
an entity boost (spaCy entities of the query matched in a separate entity collection),
and re-sorts by ``(semantic + bm25 + entity) / max``; a ``threshold`` (default 0.1)
drops candidates by their dense score first. BM25 needs the optional fastembed package
and its model files, lemmas and entities need spaCy's en_core_web_sm: both are fetched
from hubs this machine cannot reach (and are not in ``pip install mem0ai``), so mem0
falls back, as it logs, to dense similarity only. Entity boosts would stay empty anyway:
only ``infer=True`` (the LLM path) links entities to memories. Reranking is opt-in
(``rerank=True`` with a configured reranker model) and not used.
"""

from __future__ import annotations

import os
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.peers.base import Capabilities, Doc, Hit, RawStore, Unavailable, Vector

os.environ.setdefault("MEM0_TELEMETRY", "False")
# mem0 writes a config.json (an anonymous user id) under MEM0_DIR at import: keep it
# out of the home directory.
os.environ.setdefault("MEM0_DIR", str(Path(tempfile.gettempdir()) / "elephant-peers-mem0"))

try:
    from mem0 import Memory
except ImportError as exc:  # the peers venv is missing it
    Memory = None
    _IMPORT_ERROR = str(exc)

# Where mem0's OpenAI clients would go if anything bypassed the objects below: a closed
# local port, so a mistake fails at once instead of reaching the network.
_NOWHERE = "http://127.0.0.1:9/v1"
_DIMS = 384


class _GivenVectors:
    """mem0's embedder: each text's vector is the one the runner computed for it."""

    def __init__(self) -> None:
        self._by_text: dict[str, Vector] = {}

    def give(self, text: str, vector: Vector) -> None:
        # mem0 strips a query before embedding it; a stored text is embedded as given.
        self._by_text[text] = vector
        self._by_text.setdefault(text.strip(), vector)

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        vector = self._by_text.get(text)
        if vector is None:
            raise LookupError(f"mem0 asked to embed a text it was not given: {text[:80]!r}")
        return vector.tolist()

    def embed_batch(self, texts: list[str], memory_action: str = "add") -> list[list[float]]:
        return [self.embed(text, memory_action) for text in texts]


class _NoLLM:
    """Stands in for mem0's LLM: the benchmark runs no inference, so any call is a bug."""

    def generate_response(self, *args: Any, **kwargs: Any) -> str:
        raise RuntimeError("mem0 called its LLM; the peers benchmark runs it with infer=False")


def _config(workdir: Path) -> dict[str, Any]:
    """mem0's documented local setup: embedded Qdrant on disk, history db beside it."""
    return {
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "collection_name": "peers",
                "path": str(workdir / "qdrant"),
                "embedding_model_dims": _DIMS,
                "on_disk": True,
            },
        },
        # Placeholders that mem0's constructor needs; replaced in open() before any use.
        "embedder": {
            "provider": "openai",
            "config": {"api_key": "unused", "openai_base_url": _NOWHERE, "embedding_dims": _DIMS},
        },
        "llm": {"provider": "openai", "config": {"api_key": "unused", "openai_base_url": _NOWHERE}},
        "history_db_path": str(workdir / "history.db"),
    }


class Mem0Peer:
    name = "mem0"
    # Measured to 20k (the size the issue compares end-to-end search at): add() stores one
    # memory at a time and embedded Qdrant searches by brute force in Python, so 100k
    # would add most of an hour to the run.
    max_docs = 20_000
    max_docs_reason = (
        "measured to 20k only: add() stores one memory at a time and its embedded Qdrant "
        "(local mode) searches by brute force in Python"
    )

    def __init__(self) -> None:
        self._memory: Any = None
        self._vectors = _GivenVectors()
        self._raw = RawStore()

    def version(self) -> str:
        mem0ai, qdrant = metadata.version("mem0ai"), metadata.version("qdrant-client")
        return f"mem0ai {mem0ai}, qdrant-client {qdrant}"

    def settings(self) -> dict[str, Any]:
        return {
            "api": "mem0.Memory (sync), in process",
            "vector_store": "qdrant local mode (embedded, path under workdir, no server): "
            "exact cosine scan in Python, payload filter on user_id",
            "history_db": "sqlite under workdir",
            "add": "add(text, user_id=tenant, metadata={doc_id}, infer=False), one call per "
            "document: mem0 has no bulk insert (a list of messages is also inserted one by one)",
            "search": "search(query, top_k=k, filters={'user_id': tenant}, threshold=0.0); "
            "mem0 2.2.1 rejects a top-level user_id/limit in search, filters/top_k is its API",
            "threshold": "0.0 instead of the default 0.1: the runner asks for k hits and "
            "recall@60 should not be cut by a dense-score floor",
            "embedder": "the runner's all-MiniLM-L6-v2 vectors, looked up by text "
            "(Memory.embedding_model replaced; an unknown text raises)",
            "llm": "none: infer=False, Memory.llm replaced by an object that raises if called",
            "scoring": "dense cosine only here. mem0 2.2.1 adds a BM25 score (fastembed "
            "Qdrant/bm25 sparse vectors over spaCy lemmas) and spaCy entity boosts when "
            "fastembed, spaCy and en_core_web_sm are installed; their model files come from "
            "hubs this machine cannot reach, so mem0 logs that and searches by similarity",
            "rerank": "off (mem0's default; needs a reranker model or LLM)",
            "telemetry": "MEM0_TELEMETRY=False",
        }

    def capabilities(self) -> Capabilities:
        return Capabilities(
            hybrid="partly: BM25 + entity boost added to the dense score when the optional "
            "fastembed/spaCy models are present (not here: dense only)",
            filters="yes: user/agent/run ids and metadata operators (eq, in, gt, contains, AND/OR)",
            transactions="no: each memory is a separate vector-store insert plus history row",
            isolation="user_id payload filter in one shared collection",
            temporal="no: created/updated timestamps and expiration_date only",
            graph="no: 2.2.1's MemoryConfig has no graph store; its entity collection "
            "(for boosts) is filled only by infer=True",
        )

    def open(self, workdir: Path) -> None:
        self._memory = Memory.from_config(_config(workdir))
        self._memory.embedding_model = self._vectors
        self._memory.llm = _NoLLM()

    def ingest(self, docs: list[Doc]) -> None:
        self._raw.remember(docs)
        for doc in docs:
            self._vectors.give(doc.text, doc.vector)
            self._memory.add(doc.text, user_id=doc.tenant, metadata={"doc_id": doc.id}, infer=False)

    def search(self, tenant: str, query: str, vector: Vector, k: int) -> list[Hit]:
        self._vectors.give(query, vector)
        found = self._memory.search(query, top_k=k, filters={"user_id": tenant}, threshold=0.0)
        return self._raw.hits([row["metadata"]["doc_id"] for row in found["results"]])

    def close(self) -> None:
        if self._memory is not None:
            self._memory.close()
            self._memory = None


def make() -> list[Mem0Peer]:
    if Memory is None:
        raise Unavailable(f"mem0ai is not installed in this venv: {_IMPORT_ERROR}")
    return [Mem0Peer()]
