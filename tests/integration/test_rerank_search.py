"""Search with the real reranker service (a tiny cross-encoder served on 127.0.0.1).

The model is randomly initialised, so its scores mean nothing: the tests check
that search sends the pool, applies the service's order, and falls back to the
fused order (saying so in explain) when the service is down, slow or failing.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from app.config import Settings
from app.providers.reranker import HTTPReranker
from app.services.memory.commit import commit_note
from app.services.memory.schemas import NoteIn
from app.services.retrieval.schemas import RerankReport, SearchRequest
from app.services.retrieval.search import rerank_document, search
from app.services.runtime import Elephant
from tests.conftest import free_port
from tests.reranker_helpers import build_tiny_cross_encoder

T = "reranked"
NOTES = [
    "Ola keeps bees on the roof of her flat in Oslo",
    "Ola's bees produced twelve jars of honey in 2024",
    "Ola sells honey at the Saturday market in Grunerlokka",
    "Ola is afraid of wasps but not of bees",
]


@pytest.fixture(scope="module")
def reranker_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    model = build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-ce"))
    port = free_port()
    log_path = model.parent / "reranker.log"
    with log_path.open("w") as log_file:  # a file, never an unread pipe that fills and blocks
        proc = subprocess.Popen(
            [sys.executable, "-m", "reranker_server", "--model", str(model), "--port", str(port)],
            stdout=log_file,
            stderr=log_file,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail(f"reranker_server did not start:\n{log_path.read_text()[-3000:]}")
    yield url
    proc.terminate()
    proc.wait(timeout=30)


def elephant_with(base: Elephant, **reranker: object) -> Elephant:
    settings: Settings = base.settings.model_copy(
        update={"reranker": base.settings.reranker.model_copy(update={"enabled": True, **reranker})}
    )
    return Elephant(settings=settings, db=base.db, embedder=base.embedder, llm=None)


@pytest.fixture(scope="module")
def seeded(elephant: Elephant) -> Elephant:
    for text in NOTES:
        commit_note(elephant, T, NoteIn(text=text, source="notes"))
    return elephant


def test_search_applies_the_reranker_order(seeded: Elephant, reranker_url: str) -> None:
    reranking = elephant_with(seeded, url=reranker_url, pool=70)
    result = search(reranking, T, SearchRequest(query="Ola bees honey", limit=3, explain=True))
    assert result.explain is not None
    report = result.explain.reranker
    assert report.used is True and isinstance(report.pool, int) and report.pool >= 3
    scores = [hit.rerank_score for hit in result.hits]
    assert len(result.hits) == 3 and all(score is not None for score in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    # the order is exactly the service's order over the pool it was sent
    pool = search(seeded, T, SearchRequest(query="Ola bees honey", limit=report.pool))
    reply = httpx.post(
        f"{reranker_url}/rerank",
        json={"query": "Ola bees honey", "documents": [rerank_document(h) for h in pool.hits]},
    ).json()
    expected = [pool.hits[item["index"]].id for item in reply["results"]][:3]
    assert [hit.id for hit in result.hits] == expected
    reranking.close_providers()


def test_reranker_down_falls_back_to_the_fused_order(seeded: Elephant) -> None:
    down = elephant_with(seeded, url=f"http://127.0.0.1:{free_port()}", failure_threshold=2)
    fused = search(seeded, T, SearchRequest(query="Ola bees honey", limit=4))
    for attempt in range(3):
        result = search(down, T, SearchRequest(query="Ola bees honey", limit=4, explain=True))
        assert [hit.id for hit in result.hits] == [hit.id for hit in fused.hits]
        assert result.explain is not None
        report = result.explain.reranker
        assert report.used is False and report.fallback == "fused order"
        if attempt == 2:
            # no more waiting on a dead service
            assert isinstance(report.reason, str) and "circuit open" in report.reason
    assert isinstance(down.reranker, HTTPReranker) and down.reranker.circuit_open
    down.close_providers()


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A server on 127.0.0.1 that takes connections and never answers: a reranker that is
    slow for sure (a tiny timeout against the real one loses the race on a fast machine)."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(timeout=5)
    for connection in held:
        connection.close()
    listener.close()


def test_slow_reranker_times_out_and_search_still_answers(
    seeded: Elephant, silent_url: str
) -> None:
    slow = elephant_with(seeded, url=silent_url, timeout_s=0.3)
    result = search(slow, T, SearchRequest(query="Ola bees honey", limit=2, explain=True))
    assert len(result.hits) == 2
    assert result.explain is not None and result.explain.reranker.used is False
    reason = result.explain.reranker.reason
    assert isinstance(reason, str)
    assert "timed out" in reason.lower() or "timeout" in reason.lower()
    slow.close_providers()


def test_per_request_switch(seeded: Elephant, reranker_url: str) -> None:
    reranking = elephant_with(seeded, url=reranker_url)
    off = search(reranking, T, SearchRequest(query="bees", rerank=False, explain=True))
    assert off.explain is not None
    assert off.explain.reranker == RerankReport(used=False, reason="off")
    reranking.close_providers()
