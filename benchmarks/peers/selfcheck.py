"""Check one adapter on small synthetic data: it stores, finds a document by its own
vector and text, keeps tenants apart, and survives a close.

    .venv-peers/bin/python -m benchmarks.peers.selfcheck chroma

A variant that searches another's data (``shares_data_with``: langchain_pg-dense) is
checked on that peer's data, while it is open.
"""

from __future__ import annotations

import importlib
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.peers.base import Doc, Peer, Unavailable, sample_docs


def check(name: str) -> None:
    module = importlib.import_module(f"benchmarks.peers.{name}")
    try:
        peers: list[Peer] = module.make()
    except Unavailable as exc:
        print(f"{name}: unavailable: {exc}")
        return
    docs = sample_docs()
    for peer in peers:
        if getattr(peer, "shares_data_with", None) is not None:
            continue  # checked on its owner's data, below
        sharers = [p for p in peers if getattr(p, "shares_data_with", None) == peer.name]
        with tempfile.TemporaryDirectory() as work:
            peer.open(Path(work))
            started = time.perf_counter()
            peer.ingest(docs)
            ingest = f"ingest {len(docs)} in {time.perf_counter() - started:.2f} s"
            searched(peer, docs, ingest)
            for sharer in sharers:  # a variant searching the same data (langchain_pg-dense)
                sharer.open(Path(work))
                searched(sharer, docs, f"the data of {peer.name}")
                sharer.close()
            peer.close()


def searched(peer: Peer, docs: list[Doc], ingest: str) -> None:
    """Search each of 50 documents by its own vector and text: found first, in its tenant."""
    misses = 0
    started = time.perf_counter()
    for doc in docs[:50]:
        hits = peer.search(doc.tenant, doc.text, doc.vector, 10)
        assert all(h.id.startswith("d") for h in hits), hits[:3]
        tenants = {int(h.id[1:]) % 2 for h in hits}
        assert tenants <= {int(doc.id[1:]) % 2}, f"{peer.name}: another tenant's hit"
        assert hits and all(h.turn_ids for h in hits), f"{peer.name}: hits without turns"
        misses += hits[0].id != doc.id
    search_ms = (time.perf_counter() - started) / 50 * 1000
    print(
        f"{peer.name} ({peer.version()}): {ingest}, "
        f"search {search_ms:.1f} ms mean, own document not first {misses}/50; "
        f"{peer.capabilities()}"
    )
    assert misses <= 5, f"{peer.name}: a document's own vector should find it first"


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        check(arg)
