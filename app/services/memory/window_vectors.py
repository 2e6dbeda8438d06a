"""A window's vector pooled from its turns' passages: every text through the model once.

Mean pooling averages token embeddings; a window's tokens are its turns' tokens, so
summing the turns' token sums gives the window a vector without the model reading the
window again (2.5 times each turn's words at stride 2, and the longest texts of a
commit). Each turn is read in its own context rather than beside its neighbours; the
LoCoMo split decides whether that is as good (docs/benchmarks.md), and
embedding.window_vectors = model keeps the old way. A re-embed, a backfill and an import
without vectors pool stored windows the same way (stored_vectors).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from app.config import EmbeddingSettings
from app.db.resources import load_sql
from app.db.runtime import Connection
from app.providers.embedder import Embedder, TokenSums, Vectors, normalised
from app.providers.encoders import Pooled
from app.services.memory.passages import Passage
from app.services.memory.windows import Window, WindowTurn, render_turn


def pooled_windows(windows: Sequence[Window], parts: Sequence[Passage], pooled: Pooled) -> Vectors:
    """One row per window: the normalised sum of the token sums of the passages of the
    turns it spans (``parts[i]`` has ``pooled.sums[i]``)."""
    seqs = np.array([-1 if p.seq is None else p.seq for p in parts], dtype=np.int64)
    sums = np.zeros((len(windows), pooled.sums.shape[1]), dtype=np.float32)
    for row, window in enumerate(windows):
        inside = (seqs >= window.turn_start) & (seqs <= window.turn_end)
        sums[row] = pooled.sums[inside].sum(axis=0)
    return normalised(sums)


def pooling(settings: EmbeddingSettings, embedder: Embedder) -> bool:
    """Whether windows are pooled: the setting says so and the embedder gives token sums."""
    return settings.window_vectors == "pooled" and isinstance(embedder, TokenSums)


def stored_vectors(
    conn: Connection,
    settings: EmbeddingSettings,
    embedder: Embedder,
    rows: Sequence[tuple[Any, Any]],
) -> Vectors:
    """Vectors for stored memories, rows of (id, text): a window pooled from its turns'
    passages as the commit pooled it, anything else (and a window whose turns have no
    passages yet) read by the model."""
    parts: dict[str, list[str]] = {}
    if pooling(settings, embedder) and rows:
        ids = [str(row_id) for row_id, _ in rows]
        found = conn.execute(load_sql("memory/window_parts.sql"), {"ids": ids}).fetchall()
        for memory_id, speaker, text, when, start, end in found:
            prefix = render_turn(WindowTurn(0, str(speaker), "", when, None))
            parts.setdefault(str(memory_id), []).append(prefix + str(text)[start:end])
    vectors = np.zeros((len(rows), embedder.dim), dtype=np.float32)
    read = [i for i, (row_id, _) in enumerate(rows) if str(row_id) not in parts]
    if read:
        vectors[read] = embedder.embed_documents([str(rows[i][1]) for i in read])
    pooled = [i for i, (row_id, _) in enumerate(rows) if str(row_id) in parts]
    if pooled:
        assert isinstance(embedder, TokenSums)
        texts = [text for i in pooled for text in parts[str(rows[i][0])]]
        sums = embedder.embed_document_sums(texts).sums
        start = 0
        for i in pooled:
            count = len(parts[str(rows[i][0])])
            vectors[i] = normalised(sums[start : start + count].sum(axis=0, keepdims=True))[0]
            start += count
    return vectors
