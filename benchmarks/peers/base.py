"""What every peer adapter implements, and what the runner hands it.

The runner (benchmarks/peers.py) computes every embedding once (all-MiniLM-L6-v2,
L2-normalised, 384 floats) and gives the vectors to each system with the text, so no
peer embeds anything and no peer calls an LLM. Documents are LoCoMo windows (5 turns,
stride 2, rendered as Elephant renders them) or synthetic memories (benchmarks/scale.py).
A peer keeps tenants apart as well as it can (a collection, table or database per
tenant, or a user filter) and says which in ``capabilities().isolation``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]


class Unavailable(Exception):
    """The peer cannot run here; the message says why (it is printed and kept in the JSON)."""


@dataclass(frozen=True)
class Doc:
    id: str  # unique in the run
    tenant: str  # a LoCoMo conversation ("locomo-conv-26"), or "bench" (synthetic)
    text: str
    vector: Vector
    turn_ids: frozenset[str]  # LoCoMo dialogue ids ("D1:3") the text covers; empty: synthetic


@dataclass(frozen=True)
class Hit:
    id: str
    turn_ids: frozenset[str]  # what recall is scored on


@dataclass(frozen=True)
class Capabilities:
    """What a user gets beyond top-k by vector; each a short phrase starting yes/no/partly."""

    hybrid: str  # keyword (BM25 or the like) fused with dense
    filters: str  # metadata / time filters at query time
    transactions: str  # atomic multi-row writes
    isolation: str  # how tenants are kept apart
    temporal: str  # facts with validity in time, contradictions closed in time
    graph: str  # an entity graph used in retrieval


# Every adapter module has ``make() -> list[Peer]`` (one module may hold two variants, e.g.
# Elephant in process and over HTTP), raising Unavailable when its package is missing.


class Peer(Protocol):
    name: str  # short, for the table: "chroma", "lancedb", ...

    def version(self) -> str:
        """Package and version(s), e.g. "chromadb 1.5.9"."""
        ...

    def settings(self) -> dict[str, Any]:
        """How it was configured (index type, distance, fusion, storage)."""
        ...

    def capabilities(self) -> Capabilities: ...

    def open(self, workdir: Path) -> None:
        """Start empty, storing under ``workdir`` (a fresh directory per run and size)."""
        ...

    def ingest(self, docs: list[Doc]) -> None:
        """Store every document (several tenants); timed by the runner."""
        ...

    def search(self, tenant: str, query: str, vector: Vector, k: int) -> list[Hit]:
        """The tenant's best ``k`` documents for the query, best first; timed per call."""
        ...

    def close(self) -> None: ...


class RawStore:
    """For peers that store the documents themselves: remembers each document's turns so
    that a search answers Hits from ids alone."""

    def __init__(self) -> None:
        self._turns: dict[str, frozenset[str]] = {}

    def remember(self, docs: list[Doc]) -> None:
        for doc in docs:
            self._turns[doc.id] = doc.turn_ids

    def hits(self, ids: list[str]) -> list[Hit]:
        return [Hit(i, self._turns.get(i, frozenset())) for i in ids]


def by_tenant(docs: list[Doc]) -> dict[str, list[Doc]]:
    grouped: dict[str, list[Doc]] = {}
    for doc in docs:
        grouped.setdefault(doc.tenant, []).append(doc)
    return grouped


def sample_docs(count: int = 200, tenants: int = 2, seed: int = 7) -> list[Doc]:
    """Small synthetic documents with random unit vectors, for an adapter's own checks."""
    rng = np.random.default_rng(seed)
    words = [
        "bees",
        "honey",
        "Oslo",
        "rooftop",
        "market",
        "jars",
        "wasps",
        "Lisbon",
        "tram",
        "piano",
        "recital",
    ]
    docs = []
    for i in range(count):
        vector = rng.normal(size=384).astype(np.float32)
        vector /= np.linalg.norm(vector)
        text = " ".join(rng.choice(words, size=12)) + f" item{i}"
        docs.append(Doc(f"d{i}", f"t{i % tenants}", text, vector, frozenset({f"D1:{i}"})))
    return docs
