"""Model loading and scoring for the reranker service (no HTTP here).

Two model families are supported:

* ``causal``: Qwen3-Reranker-style causal LMs. Each (query, document) pair is
  put into the chat prompt of the Qwen3-Reranker model card and the score is
  the softmax over the ``no``/``yes`` token logits at the last position.
* ``cross-encoder``: classic sequence-classification cross-encoders. One label
  gives ``sigmoid(logit)``, two labels give ``softmax(logits)[1]``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoModelForSequenceClassification,
    AutoTokenizer,
)

Kind = Literal["causal", "cross-encoder"]

DEFAULT_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"
CAUSAL_PREFIX = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query "
    'and the Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>\n'
    "<|im_start|>user\n"
)
CAUSAL_SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"


def format_causal_body(instruction: str, query: str, document: str) -> str:
    """The user turn of the Qwen3-Reranker prompt."""
    return f"<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}"


def detect_kind(model: str, local_files_only: bool) -> Kind:
    """``causal`` when config.architectures names a ``*ForCausalLM``, else cross-encoder."""
    config = AutoConfig.from_pretrained(model, local_files_only=local_files_only)
    architectures = getattr(config, "architectures", None) or []
    return "causal" if any(a.endswith("ForCausalLM") for a in architectures) else "cross-encoder"


def plan_batches(lengths: Sequence[int], batch_tokens: int) -> list[list[int]]:
    """Group indices (sorted by length) so that count * longest <= batch_tokens per batch."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        longest = lengths[index]  # ascending order: the newcomer is the longest
        if current and (len(current) + 1) * longest > batch_tokens:
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


def token_id(tokenizer: Any, token: str) -> int:
    """The id of a single vocabulary token; an error when the tokenizer lacks it."""
    value = tokenizer.convert_tokens_to_ids(token)
    if not isinstance(value, int) or value == tokenizer.unk_token_id:
        raise ValueError(f"the tokenizer has no {token!r} token")
    return value


@dataclass(frozen=True)
class ModelInfo:
    """What /health reports about the loaded model."""

    model: str
    kind: Kind
    device: str
    max_length: int


class Reranker:
    """A loaded reranking model; :meth:`score` is thread-safe (one batch run at a time)."""

    def __init__(
        self,
        model: str,
        kind: Literal["auto", "causal", "cross-encoder"] = "auto",
        max_length: int = 512,
        batch_tokens: int = 8192,
        device: str | None = None,
    ) -> None:
        local = Path(model).exists()
        self.kind: Kind = detect_kind(model, local) if kind == "auto" else kind
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        dtype = torch.float16 if self.device.type == "cuda" else torch.float32
        self.model_name = model
        self.max_length = max_length
        self.batch_tokens = batch_tokens
        self._lock = threading.Lock()
        self.tokenizer: Any = AutoTokenizer.from_pretrained(model, local_files_only=local)
        loader: Any = (
            AutoModelForCausalLM if self.kind == "causal" else AutoModelForSequenceClassification
        )
        self.model: Any = loader.from_pretrained(model, local_files_only=local, dtype=dtype)
        self.model.to(self.device).eval()
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        if self.kind == "causal":
            self.tokenizer.padding_side = "left"
            self._prefix = self.tokenizer.encode(CAUSAL_PREFIX, add_special_tokens=False)
            self._suffix = self.tokenizer.encode(CAUSAL_SUFFIX, add_special_tokens=False)
            self._yes = token_id(self.tokenizer, "yes")
            self._no = token_id(self.tokenizer, "no")
            if self.max_length <= len(self._prefix) + len(self._suffix):
                raise ValueError("max_length leaves no room for the query and document")
        else:
            self.tokenizer.padding_side = "right"

    @property
    def info(self) -> ModelInfo:
        return ModelInfo(self.model_name, self.kind, str(self.device), self.max_length)

    def encode(
        self, query: str, documents: Sequence[str], instruction: str | None = None
    ) -> list[dict[str, list[int]]]:
        """Token ids (unpadded, truncated to max_length) for each document."""
        if self.kind == "causal":
            budget = self.max_length - len(self._prefix) - len(self._suffix)
            texts = [
                format_causal_body(instruction or DEFAULT_INSTRUCTION, query, d) for d in documents
            ]
            bodies = self.tokenizer(
                texts, add_special_tokens=False, truncation=True, max_length=budget
            )["input_ids"]
            return [{"input_ids": self._prefix + list(b) + self._suffix} for b in bodies]
        encoded = self.tokenizer(
            [query] * len(documents),
            list(documents),
            truncation=True,
            max_length=self.max_length,
        )
        keys = [k for k in ("input_ids", "token_type_ids") if k in encoded]
        return [{k: list(encoded[k][i]) for k in keys} for i in range(len(documents))]

    def score(
        self, query: str, documents: Sequence[str], instruction: str | None = None
    ) -> list[float]:
        """Relevance scores in [0, 1], in the order of ``documents``."""
        features = self.encode(query, documents, instruction)
        scores = [0.0] * len(features)
        lengths = [len(f["input_ids"]) for f in features]
        with self._lock, torch.inference_mode():
            for batch in plan_batches(lengths, self.batch_tokens):
                values = self._score_batch([features[i] for i in batch])
                for index, value in zip(batch, values, strict=True):
                    scores[index] = value
        return scores

    def _score_batch(self, features: list[dict[str, list[int]]]) -> list[float]:
        padded = self.tokenizer.pad(features, padding=True, return_tensors="pt")
        inputs = {k: v.to(self.device) for k, v in padded.items()}
        if self.kind == "causal":
            mask = inputs["attention_mask"]
            inputs["position_ids"] = (mask.long().cumsum(-1) - 1).clamp(min=0)
            logits = self.model(**inputs).logits[:, -1, :]
            pair = torch.stack([logits[:, self._no], logits[:, self._yes]], dim=1).float()
            return [float(x) for x in torch.softmax(pair, dim=1)[:, 1].cpu()]
        logits = self.model(**inputs).logits.float()
        if logits.shape[-1] == 1:
            return [float(x) for x in torch.sigmoid(logits[:, 0]).cpu()]
        return [float(x) for x in torch.softmax(logits, dim=-1)[:, 1].cpu()]
