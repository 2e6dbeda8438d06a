"""Tiny, randomly initialised models for tests and benchmarks (offline, seeded).

``build_tiny_causal`` writes a Qwen3-style causal LM with a word-level tokenizer
that knows the chat markers and ``yes``/``no``; ``build_tiny_cross_encoder``
writes a BERT sequence classifier with a WordPiece tokenizer.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    PreTrainedTokenizerFast,
    Qwen3Config,
    Qwen3ForCausalLM,
)

from reranker_server.scoring import CAUSAL_PREFIX, CAUSAL_SUFFIX, DEFAULT_INSTRUCTION

CHAT_MARKERS = ["<|im_start|>", "<|im_end|>", "<think>", "</think>"]
_WORD_TEXT = (
    "the a of and to in is was on for with at by from that it as be this are or an "
    "cat cats dog dogs bird fish sat mat ran park sky blue red green sun moon rain "
    "postgres database index vector search memory query document elephant paris "
    "france capital city river bridge tower music piano guitar song weather cold "
    "warm summer winter coffee tea morning evening book library read write code "
    "python rust java bug test fast slow what where when who how why which does "
    "yes no user assistant system instruct"
)
WORDS = tuple(_WORD_TEXT.split())


def _vocabulary(specials: list[str]) -> dict[str, int]:
    words = set(WORDS) | {w.lower() for w in WORDS}
    for text in (
        CAUSAL_PREFIX,
        CAUSAL_SUFFIX,
        DEFAULT_INSTRUCTION,
        "<Instruct>: <Query>: <Document>:",
    ):
        for marker in CHAT_MARKERS:
            text = text.replace(marker, " ")
        words |= set(re.findall(r"\w+|[^\w\s]+", text))
    tokens = specials + sorted(words - set(specials))
    return {token: i for i, token in enumerate(tokens)}


def build_tiny_causal(path: Path, seed: int = 0) -> Path:
    """Save a tiny Qwen3ForCausalLM and its word-level tokenizer into ``path``."""
    specials = ["[PAD]", "[UNK]", *CHAT_MARKERS]
    vocab = _vocabulary(specials)
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.add_special_tokens(specials)
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=backend,
        unk_token="[UNK]",
        pad_token="[PAD]",
        eos_token="<|im_end|>",
        padding_side="left",
    )
    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=64,
        head_dim=16,
        max_position_embeddings=1024,
        pad_token_id=vocab["[PAD]"],
        eos_token_id=vocab["<|im_end|>"],
        tie_word_embeddings=False,
        initializer_range=0.5,
    )
    Qwen3ForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def build_tiny_cross_encoder(path: Path, num_labels: int = 1, seed: int = 0) -> Path:
    """Save a tiny BertForSequenceClassification and its WordPiece tokenizer into ``path``."""
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = _vocabulary(specials)
    backend = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))
    backend.normalizer = normalizers.BertNormalizer(lowercase=True)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=backend,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        initializer_range=0.5,
        pad_token_id=vocab["[PAD]"],
    )
    config.num_labels = num_labels
    BertForSequenceClassification(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
