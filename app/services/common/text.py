"""Small text utilities shared by commit, dedup and the gate."""

from __future__ import annotations

import hashlib
import re

_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"[\w']+", re.UNICODE)


def normalise(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def content_hash(text: str) -> str:
    """Identity for exact dedup: case and whitespace do not make a new memory."""
    return hashlib.sha256(normalise(text).lower().encode()).hexdigest()


def tokens(text: str) -> set[str]:
    return {word.lower() for word in _WORD.findall(text)}


def jaccard(left: str, right: str) -> float:
    a, b = tokens(left), tokens(right)
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def preview(text: str, limit: int = 200) -> str:
    flat = normalise(text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
