"""The BM25 tokeniser and sparse encoding the Qdrant peers share (qdrant.py, seeds.py).

One place, so that the Qdrant sparse vectors and the FTS5 sidecar's queries see the same
words: lowercase, split on anything but letters and digits, a short English stop-word list
(Lucene's classic 33 words and the "s" and "t" of split contractions), no stemming. Not an
adapter: it has no ``make()``.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter

K1 = 1.2
B = 0.75

# Lucene's EnglishAnalyzer default stop set, short so that it only drops glue words, plus
# the "s" and "t" that splitting "Caroline's" and "don't" on the apostrophe leaves.
STOP_WORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
    "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
    "these", "they", "this", "to", "was", "will", "with", "s", "t",
})  # fmt: skip

_WORD = re.compile(r"[^\W_]+")


def tokens(text: str) -> list[str]:
    """The text's words as BM25 counts them (repeats kept, for term frequency)."""
    return [word for word in _WORD.findall(text.lower()) if word not in STOP_WORDS]


def query_terms(text: str) -> list[str]:
    """The query's distinct words, in order of first use."""
    return list(dict.fromkeys(tokens(text)))


def term_id(term: str) -> int:
    """A stable id for a term (CRC-32, so no vocabulary has to be kept or persisted)."""
    return zlib.crc32(term.encode("utf-8"))


class SparseEncoder:
    """BM25 term weights without IDF (Qdrant's ``Modifier.IDF`` applies that at query time).

    The average document length is fixed by the first corpus it is fitted on, the way a
    BM25 encoder with a fixed ``avg_len`` works; later batches are scored against it.
    """

    def __init__(self, k1: float = K1, b: float = B) -> None:
        self.k1 = k1
        self.b = b
        self.avg_len: float | None = None

    def fit(self, texts: list[str]) -> None:
        if self.avg_len is None and texts:
            self.avg_len = max(sum(len(tokens(t)) for t in texts) / len(texts), 1.0)

    def document(self, text: str) -> tuple[list[int], list[float]]:
        """Sorted term ids and their saturated, length-normalised term frequencies."""
        words = tokens(text)
        counts = Counter(term_id(word) for word in words)
        norm = self.k1 * (1 - self.b + self.b * len(words) / (self.avg_len or 1.0))
        ids = sorted(counts)
        return ids, [counts[i] * (self.k1 + 1) / (counts[i] + norm) for i in ids]

    @staticmethod
    def query(text: str) -> tuple[list[int], list[float]]:
        """Sorted ids of the query's distinct terms, each weighted 1 (IDF comes from Qdrant)."""
        ids = sorted({term_id(term) for term in query_terms(text)})
        return ids, [1.0] * len(ids)
