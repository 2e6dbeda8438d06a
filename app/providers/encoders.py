"""The two runtimes of a local encoder: onnxruntime (the default) and torch (the fallback).

Both answer one question for a batch of texts: the sum of each text's token embeddings
over its attention mask, and how many tokens that was. A text's vector is that sum
normalised (mean pooling, the sentence-transformers recipe); a window's vector can be
pooled from its turns' sums without running the model on the window again.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from app.errors import ConfigError
from app.providers import onnx_export

log = logging.getLogger(__name__)

Sums = npt.NDArray[np.float32]
Counts = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Pooled:
    """Per text: the sum of its token embeddings (unnormalised) and its token count."""

    sums: Sums
    counts: Counts


class Encoder(Protocol):
    runtime: str

    def pool(self, texts: list[str]) -> Pooled:
        """Every text's sum and count, in forward passes the encoder's BatchPlan sizes."""
        ...


@dataclass(frozen=True)
class BatchPlan:
    """How texts are cut into forward passes: sorted by length, at most ``size`` texts and
    about ``tokens`` padded tokens a pass (attention costs the square of the width, and
    one long text in a batch of short ones would pad them all to its length)."""

    max_length: int
    size: int
    tokens: int

    def batches(self, lengths: list[int]) -> list[list[int]]:
        order = sorted(range(len(lengths)), key=lengths.__getitem__)
        batches: list[list[int]] = []
        current: list[int] = []
        for i in order:
            # sorted ascending: the text joining is the batch's widest
            if current and (
                len(current) >= self.size or (len(current) + 1) * lengths[i] > self.tokens
            ):
                batches.append(current)
                current = []
            current.append(i)
        if current:
            batches.append(current)
        return batches


def default_threads() -> int:
    """Physical cores, as onnxruntime itself would choose (hyper-threads slow it down)."""
    import psutil

    return max(1, psutil.cpu_count(logical=False) or os.cpu_count() or 1)


# ------------------------------------------------------------------ onnxruntime


class OnnxEncoder:
    """The exported graph (app/providers/onnx_export.py) on onnxruntime's CPU provider, or
    CUDA where onnxruntime-gpu offers it; the tokenizer is the model's own tokenizer.json
    run by the `tokenizers` library, truncating as transformers does. Texts are tokenized
    once, sorted by length and padded per batch, so a batch of short turns never pays for
    a long one's padding."""

    runtime = "onnx"

    def __init__(
        self,
        folder: Path,
        dim: int,
        plan: BatchPlan,
        threads: int,
        device: str,
        spin: bool = False,
    ) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or default_threads()
        options.inter_op_num_threads = 1
        # By default idle threads sleep instead of spinning: the cores are shared with
        # Postgres and the other requests of this process (embedding.spin says why).
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        offered = onnxruntime.get_available_providers()
        providers = ["CPUExecutionProvider"]
        if device.startswith("cuda") and "CUDAExecutionProvider" in offered:
            providers.insert(0, "CUDAExecutionProvider")
        self.session = onnxruntime.InferenceSession(
            str(folder / onnx_export.ONNX_FILE), options, providers=providers
        )
        self.inputs = {item.name for item in self.session.get_inputs()}
        tokenizer = Tokenizer.from_file(str(folder / onnx_export.TOKENIZER_FILE))
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=plan.max_length)
        pad_id = tokenizer.token_to_id("[PAD]")
        self.pad_id = 0 if pad_id is None else pad_id
        self.tokenizer = tokenizer
        self.dim = dim
        self.plan = plan
        self.threads = options.intra_op_num_threads

    def pool(self, texts: list[str]) -> Pooled:
        encodings = self.tokenizer.encode_batch(texts)
        lengths = [len(e.ids) for e in encodings]
        sums = np.zeros((len(texts), self.dim), dtype=np.float32)
        counts = np.asarray(lengths, dtype=np.int64)
        for index in self.plan.batches(lengths):
            width = max(lengths[i] for i in index)
            ids = np.full((len(index), width), self.pad_id, dtype=np.int64)
            mask = np.zeros((len(index), width), dtype=np.int64)
            types = np.zeros((len(index), width), dtype=np.int64)
            for row, i in enumerate(index):
                ids[row, : lengths[i]] = encodings[i].ids
                mask[row, : lengths[i]] = 1
                types[row, : lengths[i]] = encodings[i].type_ids
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self.inputs:
                feed["token_type_ids"] = types
            (hidden,) = self.session.run(["last_hidden_state"], feed)
            hidden = np.asarray(hidden, dtype=np.float32)
            sums[index] = np.einsum("btd,bt->bd", hidden, mask.astype(np.float32))
        return Pooled(sums=sums, counts=counts)


def load_onnx(
    model: str,
    model_dir: Path | None,
    onnx_dir: str,
    dim: int,
    plan: BatchPlan,
    threads: int,
    device: str,
    spin: bool = False,
) -> OnnxEncoder:
    """The ONNX file of ``model``, verified against its manifest; exported here first when
    there is none and torch is installed (a one-time step `make install` normally does)."""
    started = time.monotonic()
    folder = onnx_export.folder_for(model, model_dir, onnx_dir)
    onnx_export.ensure(model, model_dir, folder)
    encoder = OnnxEncoder(folder, dim, plan, threads, device, spin)
    log.info(
        "embedding model %s loaded (onnxruntime, %d threads) in %.2fs",
        model,
        encoder.threads,
        time.monotonic() - started,
    )
    return encoder


# ------------------------------------------------------------------ torch


class TorchEncoder:
    """transformers' AutoModel on torch (embedding.runtime = torch): the reference the ONNX
    export is checked against, and the runtime for a device onnxruntime does not serve."""

    runtime = "torch"

    def __init__(self, model_dir: Path, plan: BatchPlan, threads: int, device: str) -> None:
        try:
            import torch
            from transformers import AutoModel, AutoTokenizer
            from transformers.utils import logging as transformers_logging
        except ImportError:
            raise ConfigError(
                "embedding.runtime = torch needs torch and transformers: install the extra "
                "`torch` (pip install 'elephant-memory[torch]') or use runtime onnx"
            ) from None
        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        if threads:
            torch.set_num_threads(threads)
        self.torch: Any = torch
        self.device = torch.device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
        self.model = AutoModel.from_pretrained(str(model_dir), local_files_only=True)
        self.model.to(self.device).eval()
        self.plan = plan

    def pool(self, texts: list[str]) -> Pooled:
        """Tokenized once; each batch padded to its own widest text."""
        torch = self.torch
        encoded = self.tokenizer(texts, truncation=True, max_length=self.plan.max_length)
        features = [{key: encoded[key][i] for key in encoded} for i in range(len(texts))]
        lengths = [len(feature["input_ids"]) for feature in features]
        sums: Sums | None = None
        with torch.inference_mode():
            for index in self.plan.batches(lengths):
                batch = self.tokenizer.pad([features[i] for i in index], return_tensors="pt").to(
                    self.device
                )
                hidden = self.model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(dim=1).float().cpu().numpy()
                if sums is None:
                    sums = np.zeros((len(texts), pooled.shape[1]), dtype=np.float32)
                sums[index] = pooled
        assert sums is not None
        return Pooled(sums=sums, counts=np.asarray(lengths, dtype=np.int64))


def load_torch(
    model: str, model_dir: Path, plan: BatchPlan, threads: int, device: str
) -> TorchEncoder:
    started = time.monotonic()
    encoder = TorchEncoder(model_dir, plan, threads, device)
    log.info("embedding model %s loaded (torch) in %.1fs", model, time.monotonic() - started)
    return encoder
