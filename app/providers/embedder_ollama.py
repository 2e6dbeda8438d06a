"""Embeddings from an Ollama server (``/api/embed``), for models too big to run in-process.

Rows are re-normalised here even though most Ollama models already return unit
vectors: the store compares by inner product and must not depend on the model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import httpx
import numpy as np
import numpy.typing as npt
import ollama
from pydantic import ValidationError

from app.config import EmbeddingSettings
from app.providers.embedder_errors import EmbedderError

Vectors = npt.NDArray[np.float32]


class OllamaEmbedder:
    """The Embedder protocol over Ollama; dimension checked against ``embedding.dim``."""

    def __init__(self, settings: EmbeddingSettings) -> None:
        self.model_name = settings.model
        self.dim = settings.dim
        self.url = settings.ollama_url
        self.timeout_s = settings.timeout_s
        self._batch_size = settings.batch_size
        self._query_prefix = settings.query_prefix
        self._document_prefix = settings.document_prefix
        self._client = ollama.Client(host=settings.ollama_url, timeout=settings.timeout_s)

    def close(self) -> None:
        self._client.close()  # type: ignore[no-untyped-call]

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._embed([self._document_prefix + text for text in texts])

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._embed([self._query_prefix + text for text in texts])

    def _embed(self, texts: list[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), self._batch_size):
            batch = texts[start : start + self._batch_size]
            out[start : start + len(batch)] = self._embed_batch(batch)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0  # an all-zero row stays zero rather than NaN
        normalised: Vectors = (out / norms).astype(np.float32, copy=False)
        return normalised

    def _embed_batch(self, batch: list[str]) -> Vectors:
        where = f"Ollama at {self.url} (model {self.model_name})"
        try:
            response = self._client.embed(model=self.model_name, input=batch)
        except ollama.ResponseError as exc:
            hint = f"; run `ollama pull {self.model_name}`" if exc.status_code == 404 else ""
            raise EmbedderError(
                f"{where} answered HTTP {exc.status_code}: {exc.error}{hint}"
            ) from exc
        except httpx.TimeoutException as exc:
            raise EmbedderError(f"{where} did not answer within {self.timeout_s}s") from exc
        except (ConnectionError, httpx.HTTPError) as exc:
            raise EmbedderError(f"cannot reach {where}: {exc}") from exc
        except (json.JSONDecodeError, ValidationError) as exc:
            raise EmbedderError(f"{where} sent a malformed response: {exc}") from exc
        try:
            rows = np.asarray(response.embeddings, dtype=np.float32)
        except ValueError as exc:  # ragged rows
            raise EmbedderError(f"{where} returned embeddings of unequal length") from exc
        if rows.ndim != 2 or rows.shape[0] != len(batch):
            raise EmbedderError(
                f"{where} returned {rows.shape[0] if rows.ndim else 0} embeddings "
                f"for {len(batch)} texts"
            )
        if rows.shape[1] != self.dim:
            raise EmbedderError(
                f"{where} returns {rows.shape[1]}-d vectors but embedding.dim is {self.dim}; "
                "use a model of that dimension or re-initialise the database"
            )
        return rows
