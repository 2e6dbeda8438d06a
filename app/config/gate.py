"""The write path: the admission gate, near-duplicate merging and commit limits.

``gate`` scores every write before it is admitted; ``dedup`` says which stored
neighbours are close enough to be a near duplicate; ``commit`` bounds the notes and
conversations accepted and how conversations are cut into windows.
"""

from __future__ import annotations

from pydantic import Field

from app.config.base import _Section


class GateSettings(_Section):
    enabled: bool = Field(True, description="Run the A-MAC admission gate on every write.")
    threshold: float = Field(
        4.0, ge=0, le=10, description="Composite score needed to admit (per tenant overridable)."
    )
    novelty_neighbours: int = Field(
        5, ge=1, le=100, description="Stored neighbours novelty is measured against."
    )


class DedupSettings(_Section):
    """Which stored neighbours are close enough to be a near duplicate. A close neighbour
    is merged only when it carries the same information (app.services.memory.dedup)."""

    near_cosine: float = Field(
        0.92, ge=0, le=1, description="Close neighbour: cosine at least this AND token Jaccard..."
    )
    near_jaccard: float = Field(0.5, ge=0, le=1, description="...above this.")
    strong_cosine: float = Field(
        0.95, ge=0, le=1, description="Close neighbour on cosine alone at or above this."
    )


class CommitSettings(_Section):
    max_text_chars: int = Field(
        32000, ge=1, le=1_000_000, description="Longest note or turn accepted."
    )
    max_turns: int = Field(
        10000, ge=1, description="Most turns accepted in one commit_conversation."
    )
    window_size: int = Field(5, ge=1, le=100, description="Turns per conversation window.")
    stride: int = Field(2, ge=1, le=100, description="Turns between window starts.")
