"""The embedder's error, kept apart so callers can catch it without importing a backend."""

from __future__ import annotations

from app.errors import ElephantError


class EmbedderError(ElephantError, status_code=503, code="embedder_unavailable"):
    """The embedding backend cannot be reached or answered something unusable."""
