"""The local embedder: concurrent callers share forward passes and get their own vectors."""

from __future__ import annotations

import threading

import numpy as np

from app.providers.embedder import Embedder, LocalEmbedder

TEXTS = [
    "Marta repaired the greenhouse roof in Tromso after the storm",
    "Kenji adopted a grey cat named Miso",
    "The quarterly budget review is every second Thursday",
    "Elena gives violin lessons on Saturdays",
    "short",
    "A much longer sentence about the Lisbon office moving its backups to a tape library "
    "during 2023, with every detail of the migration written down for the auditors",
]


def test_concurrent_callers_get_exactly_their_own_vectors(embedder: Embedder) -> None:
    assert isinstance(embedder, LocalEmbedder)
    expected = {text: embedder.embed_documents([text])[0] for text in TEXTS}
    results: dict[tuple[int, int], np.ndarray] = {}
    wrong: list[tuple[int, str]] = []
    barrier = threading.Barrier(12)

    def call(worker: int) -> None:
        barrier.wait()
        for round_ in range(3):
            mine = [TEXTS[(worker + round_ + k) % len(TEXTS)] for k in range(1 + worker % 3)]
            vectors = embedder.embed_documents(mine)
            for k, vector in enumerate(vectors):
                results[(worker, round_ * 10 + k)] = vector
                if not np.allclose(vector, expected[mine[k]], atol=1e-4):
                    wrong.append((worker, mine[k]))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    assert wrong == []
    assert len(results) == sum(3 * (1 + i % 3) for i in range(12))


def test_an_empty_call_embeds_nothing(embedder: Embedder) -> None:
    assert embedder.embed_documents([]).shape == (0, embedder.dim)
