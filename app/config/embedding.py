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
        "local", description="Embedder backend: local (this machine, offline) or ollama."
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
    runtime: Literal["onnx", "torch"] = Field(
        "onnx",
        description="local: onnx (onnxruntime over a one-time export of the model, "
        "`elephant models export`) or torch (transformers; needs the extra `torch`). "
        "Both give the same model's vectors.",
    )
    onnx_dir: str = Field(
        "",
        description="local, onnx: the folder of the exported model.onnx, tokenizer.json and "
        "manifest.json. Empty: share/elephant/models/<model> of this install for the bundled "
        "model, <model directory>/onnx for a model directory.",
    )
    threads: int = Field(
        0,
        ge=0,
        le=256,
        description="local: threads of one forward pass (0: the physical cores). With several "
        "processes embedding on one machine, give each its share.",
    )
    spin: bool = Field(
        False,
        description="local, onnx: idle threads of a forward pass spin instead of sleeping. "
        "Faster on an idle machine (a query's p50 2.3 ms against 3.5 ms, 2 threads), much "
        "slower on a busy one (21.6 ms against 8.1 ms at load 4 on 2 cores): spinning takes "
        "the cores Postgres and other requests need.",
    )
    batch_size: int = Field(32, ge=1, le=1024, description="Texts per embedding batch.")
    batch_tokens: int = Field(
        8192,
        ge=64,
        le=1_000_000,
        description="local: at most about this many padded tokens in one forward pass; texts "
        "are sorted by length so short ones are not padded to a long one.",
    )
    cache_size: int = Field(
        4096,
        ge=0,
        le=1_000_000,
        description="local: the last this many texts embedded are kept (about 1.6 KB each at "
        "384 dimensions), so an exact repeat is not read by the model again; 0 turns it off.",
    )
    max_length: int = Field(256, ge=8, le=8192, description="Token limit per text (local).")
    passage_words: int = Field(
        48,
        ge=8,
        le=8192,
        description="Every turn, and a note longer than this, is also embedded in parts of "
        "whole sentences of at most this many words, so nothing past max_length is unseen and "
        "one statement is not drowned by the rest of a long answer.",
    )
    window_vectors: Literal["pooled", "model"] = Field(
        "pooled",
        description="local: a conversation window's vector pooled from its turns' token "
        "embeddings, so the model reads every turn once (pooled), or the model reading the "
        "window's whole text again (model). Ollama always reads the window.",
    )
    device: str = Field(
        "cpu",
        description="local: cpu, or cuda (onnxruntime-gpu's CUDA provider when installed; "
        "torch's device with runtime torch, which also takes mps).",
    )
    ollama_url: str = Field("http://127.0.0.1:11434", description="Ollama server for ollama.")
    query_prefix: str = Field("", description="Prepended to queries (nomic: 'search_query: ').")
    document_prefix: str = Field(
        "", description="Prepended to stored texts (nomic: 'search_document: ')."
    )
    timeout_s: float = Field(30.0, gt=0, description="Seconds per embedding request (ollama).")
