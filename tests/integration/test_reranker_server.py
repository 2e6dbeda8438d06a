"""The reranker service, served for real on 127.0.0.1 with tiny random models."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch
import uvicorn
from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer

from reranker_server.app import Limits, create_app
from reranker_server.scoring import Reranker, plan_batches
from tests.reranker_helpers import build_tiny_causal, build_tiny_cross_encoder

QUERY = "where is the capital of france"
DOCS = [
    "paris is the capital of france and a city with a river",
    "the cat sat on the mat",
    "postgres index search for vector memory",
    "blue sky and the sun in summer morning",
    "a",
    "the dog ran in the park with the cat in the rain and the cold winter evening",
    "music piano guitar song",
    "paris",
]
SYSTEM = (
    "Judge whether the Document meets the requirements based on the Query and the Instruct "
    'provided. Note that the answer can only be "yes" or "no".'
)
INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Served:
    """A uvicorn server in a background thread."""

    def __init__(self, reranker: Reranker, limits: Limits | None = None) -> None:
        self.reranker = reranker
        port = _free_port()
        config = uvicorn.Config(
            create_app(reranker, limits), host="127.0.0.1", port=port, log_level="warning"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.02)
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)

    def rerank(self, **body: object) -> httpx.Response:
        return self.client.post("/rerank", json=body)

    def close(self) -> None:
        self.client.close()
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("reranker-models")
    return {
        "causal": build_tiny_causal(root / "causal", seed=1),
        "bert1": build_tiny_cross_encoder(root / "bert1", num_labels=1, seed=2),
        "bert2": build_tiny_cross_encoder(root / "bert2", num_labels=2, seed=3),
    }


@pytest.fixture(scope="module")
def servers(models: dict[str, Path]) -> Iterator[dict[str, Served]]:
    limits = Limits(max_documents=20, max_query_chars=200, max_document_chars=300)
    served = {
        "causal": Served(Reranker(str(models["causal"]), batch_tokens=100_000), limits),
        "causal_tiny": Served(Reranker(str(models["causal"]), batch_tokens=1), limits),
        "bert1": Served(Reranker(str(models["bert1"]), batch_tokens=100_000), limits),
        "bert1_tiny": Served(Reranker(str(models["bert1"]), batch_tokens=40), limits),
        "bert2": Served(Reranker(str(models["bert2"])), limits),
    }
    yield served
    for server in served.values():
        server.close()


def scores_by_index(response: httpx.Response) -> list[float]:
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    by_index = {r["index"]: r["score"] for r in results}
    return [by_index[i] for i in range(len(by_index))]


def expected_causal(path: Path, query: str, doc: str, instruction: str = INSTRUCTION) -> float:
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model: Any = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
    model.eval()
    text = (
        f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n"
        f"<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {doc}"
        "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    ids = tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, -1]
    yes, no = tokenizer.convert_tokens_to_ids("yes"), tokenizer.convert_tokens_to_ids("no")
    return float(torch.softmax(torch.stack([logits[no], logits[yes]]), dim=0)[1])


def expected_cross(path: Path, query: str, doc: str) -> float:
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(path, local_files_only=True).eval()
    with torch.no_grad():
        logits = model(**tokenizer(query, doc, return_tensors="pt")).logits[0]
    if logits.shape[0] == 1:
        return float(torch.sigmoid(logits[0]))
    return float(torch.softmax(logits, dim=0)[1])


def test_health(servers: dict[str, Served], models: dict[str, Path]) -> None:
    body = servers["causal"].client.get("/health").json()
    assert body == {
        "status": "ok",
        "model": str(models["causal"]),
        "kind": "causal",
        "device": "cpu",
        "max_length": 512,
    }
    assert servers["bert1"].client.get("/health").json()["kind"] == "cross-encoder"


# The server scores a padded batch, the reference one document at a time: float32 sums
# taken in another order (the kernels a busy machine's thread pool picks) differ by up to
# 1e-4 on the causal model (seen once in CI at load 7); the scores themselves are far apart.
CAUSAL_TOLERANCE = 5e-4


def test_causal_scores_match_the_model_card_formula(
    servers: dict[str, Served], models: dict[str, Path]
) -> None:
    scores = scores_by_index(servers["causal"].rerank(query=QUERY, documents=DOCS))
    expected = [expected_causal(models["causal"], QUERY, d) for d in DOCS]
    assert scores == pytest.approx(expected, abs=CAUSAL_TOLERANCE)
    assert len(set(scores)) == len(scores)


def test_causal_custom_instruction(servers: dict[str, Served], models: dict[str, Path]) -> None:
    instruction = "what book does the code read"
    response = servers["causal"].rerank(query=QUERY, documents=DOCS[:3], instruction=instruction)
    expected = [expected_causal(models["causal"], QUERY, d, instruction) for d in DOCS[:3]]
    assert scores_by_index(response) == pytest.approx(expected, abs=CAUSAL_TOLERANCE)


@pytest.mark.parametrize("name", ["bert1", "bert2"])
def test_cross_encoder_scores(
    servers: dict[str, Served], models: dict[str, Path], name: str
) -> None:
    scores = scores_by_index(servers[name].rerank(query=QUERY, documents=DOCS))
    expected = [expected_cross(models[name], QUERY, d) for d in DOCS]
    assert scores == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize(("big", "tiny"), [("causal", "causal_tiny"), ("bert1", "bert1_tiny")])
def test_batching_does_not_change_scores(servers: dict[str, Served], big: str, tiny: str) -> None:
    batched = scores_by_index(servers[big].rerank(query=QUERY, documents=DOCS))
    single = scores_by_index(servers[tiny].rerank(query=QUERY, documents=DOCS))
    assert batched == pytest.approx(single, abs=1e-5)


def test_plan_batches_respects_the_budget() -> None:
    lengths = [5, 30, 7, 12, 30, 1, 9]
    batches = plan_batches(lengths, 40)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for batch in batches:
        assert len(batch) == 1 or len(batch) * max(lengths[i] for i in batch) <= 40
    assert plan_batches(lengths, 1) == [[i] for i in sorted(range(7), key=lambda i: lengths[i])]


def test_results_sorted_deterministic_and_top_n(servers: dict[str, Served]) -> None:
    docs = [*DOCS, DOCS[1]]  # a duplicate text keeps its own index
    first = servers["causal"].rerank(query=QUERY, documents=docs).json()
    second = servers["causal"].rerank(query=QUERY, documents=docs).json()
    assert first["results"] == second["results"]
    assert first["model"].endswith("causal") and first["elapsed_ms"] >= 0
    results = first["results"]
    assert sorted(r["index"] for r in results) == list(range(len(docs)))
    keys = [(-r["score"], r["index"]) for r in results]
    assert keys == sorted(keys)
    scores = scores_by_index(servers["causal"].rerank(query=QUERY, documents=docs))
    assert scores[1] == scores[len(docs) - 1]
    top = servers["causal"].rerank(query=QUERY, documents=docs, top_n=3).json()["results"]
    assert top == results[:3]


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ({"query": "cat", "documents": ["a"] * 21}, 413, "limit of 20"),
        ({"query": "cat", "documents": ["a", "a " * 200]}, 422, "documents[1]"),
        ({"query": "cat " * 100, "documents": ["a"]}, 422, "query"),
        ({"query": "  ", "documents": ["a"]}, 422, "query"),
        ({"query": "cat", "documents": []}, 422, "documents"),
        ({"query": "cat", "documents": ["a"], "extra": 1}, 422, "extra"),
        ({"query": "cat", "documents": ["a", 3]}, 422, "documents[1]"),
        ({"query": "cat", "documents": ["a"], "top_n": 2}, 422, "top_n"),
        ({"query": "cat", "documents": ["a"], "top_n": 0}, 422, "top_n"),
        ({"documents": ["a"]}, 422, "query"),
    ],
)
def test_bounds(
    servers: dict[str, Served], body: dict[str, object], status: int, needle: str
) -> None:
    response = servers["bert2"].client.post("/rerank", json=body)
    assert response.status_code == status
    assert needle in response.json()["detail"]


def test_invalid_json_is_422(servers: dict[str, Served]) -> None:
    response = servers["bert2"].client.post("/rerank", content=b"{not json")
    assert response.status_code == 422


def test_concurrent_requests(servers: dict[str, Served]) -> None:
    served = servers["causal"]
    reference = scores_by_index(served.rerank(query=QUERY, documents=DOCS))
    with ThreadPoolExecutor(max_workers=8) as pool:
        responses = list(pool.map(lambda _: served.rerank(query=QUERY, documents=DOCS), range(16)))
    for response in responses:
        assert scores_by_index(response) == pytest.approx(reference, abs=1e-6)


def test_model_error_is_500_json(
    servers: dict[str, Served], monkeypatch: pytest.MonkeyPatch
) -> None:
    served = servers["bert2"]

    def broken(*_: object) -> list[float]:
        raise RuntimeError("boom")

    monkeypatch.setattr(served.reranker, "score", broken)
    response = served.rerank(query="cat", documents=["a"])
    assert response.status_code == 500
    assert "boom" in response.json()["detail"]
    monkeypatch.undo()
    assert served.rerank(query="cat", documents=["a"]).status_code == 200


def test_cli_entry_point(models: dict[str, Path]) -> None:
    port = _free_port()
    command = [sys.executable, "-m", "reranker_server", "--model", str(models["bert1"])]
    command += ["--port", str(port), "--max-length", "64"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120  # imports torch and loads a model: slow on a busy box
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except httpx.TransportError:
                assert process.poll() is None, "server exited"
                assert time.monotonic() < deadline, "server did not start"
                time.sleep(0.2)
        assert health.json()["kind"] == "cross-encoder"
        assert health.json()["max_length"] == 64
    finally:
        process.terminate()
        process.wait(timeout=10)
