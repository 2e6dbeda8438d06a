"""The embedder: which model turns texts into vectors, and how texts are cut and sent.

The provider (local transformers or Ollama), the model and its vector dimension (fixed
when the database is initialised), batch and token limits, how long texts are split into
passages, and the prefixes some models expect on queries and documents.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.config.base import _Section


class EmbeddingSettings(_Section):
    provider: Literal["local", "ollama"] = Field(
        "local", description="Embedder backend: local (transformers, offline) or ollama."
    )
    model: str = Field(
        "all-MiniLM-L6-v2",
        description="local: all-MiniLM-L6-v2 (bundled) or a Hugging Face model directory; "
        "ollama: a model name such as nomic-embed-text.",
    )
    dim: int = Field(
        384,
        ge=1,
        le=16000,
        description="Vector dimension; fixed when the database is initialised.",
    )
    batch_size: int = Field(32, ge=1, le=1024, description="Texts per embedding batch.")
    max_length: int = Field(256, ge=8, le=8192, description="Token limit per text (local).")
    passage_words: int = Field(
        48,
        ge=8,
        le=8192,
        description="Every turn, and a note longer than this, is also embedded in parts of "
        "whole sentences of at most this many words, so nothing past max_length is unseen and "
        "one statement is not drowned by the rest of a long answer.",
    )
    device: str = Field("cpu", description="Torch device for provider local (cpu, cuda, mps).")
    ollama_url: str = Field("http://127.0.0.1:11434", description="Ollama server for ollama.")
    query_prefix: str = Field("", description="Prepended to queries (nomic: 'search_query: ').")
    document_prefix: str = Field(
        "", description="Prepended to stored texts (nomic: 'search_document: ')."
    )
    timeout_s: float = Field(30.0, gt=0, description="Seconds per embedding request (ollama).")
