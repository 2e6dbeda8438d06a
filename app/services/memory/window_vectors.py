"""A window's vector pooled from its turns' passages: every text through the model once.

Mean pooling averages token embeddings; a window's tokens are its turns' tokens, so
summing the turns' token sums gives the window a vector without the model reading the
window again (2.5 times each turn's words at stride 2, and the longest texts of a
commit). Each turn is read in its own context rather than beside its neighbours; the
LoCoMo split decides whether that is as good (docs/benchmarks.md), and
embedding.window_vectors = model keeps the old way.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.providers.embedder import Vectors, normalised
from app.providers.encoders import Pooled
from app.services.memory.passages import Passage
from app.services.memory.windows import Window


def pooled_windows(windows: Sequence[Window], parts: Sequence[Passage], pooled: Pooled) -> Vectors:
    """One row per window: the normalised sum of the token sums of the passages of the
    turns it spans (``parts[i]`` has ``pooled.sums[i]``)."""
    seqs = np.array([-1 if p.seq is None else p.seq for p in parts], dtype=np.int64)
    sums = np.zeros((len(windows), pooled.sums.shape[1]), dtype=np.float32)
    for row, window in enumerate(windows):
        inside = (seqs >= window.turn_start) & (seqs <= window.turn_end)
        sums[row] = pooled.sums[inside].sum(axis=0)
    return normalised(sums)
