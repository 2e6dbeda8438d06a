"""Elephant's reranker microservice: torch + transformers behind a small HTTP API."""

from __future__ import annotations

__version__ = "0.1.0"
