"""LLM providers and the Ollama embedder against a fake server that speaks the real wire formats.

No SDK is mocked: the anthropic and ollama clients make real HTTP requests to a
stdlib server on 127.0.0.1 that replays scripted answers and records what it got.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel, ConfigDict, Field

from app.config import EmbeddingSettings, LLMSettings, Settings
from app.errors import ConfigError
from app.providers.embedder_errors import EmbedderError
from app.providers.embedder_ollama import OllamaEmbedder
from app.providers.llm import (
    AnthropicLLM,
    LLMError,
    OllamaLLM,
    build_llm,
    extract_json_object,
)

pytestmark = pytest.mark.timeout(10)
# The Anthropic SDK is imported lazily by the provider; importing it here, at collection,
# keeps its import (seconds on a busy machine, e.g. in a parallel run) out of the first
# test's 10 s.
pytest.importorskip("anthropic")


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdict: str
    score: float = Field(ge=0, le=10)


SYSTEM = "You judge things for the unit tests."


# ---------------------------------------------------------------- the fake server


@dataclass
class Scripted:
    status: int
    body: Any
    delay_s: float = 0.0


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeServer:
    url: str
    queue: deque[Scripted] = field(default_factory=deque)
    requests: list[Received] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def reply(self, status: int, body: Any, delay_s: float = 0.0) -> None:
        self.queue.append(Scripted(status, body, delay_s))

    def anthropic(
        self, text: str, tokens_in: int = 10, tokens_out: int = 5, stop: str = "end_turn"
    ) -> None:
        self.reply(
            200,
            {
                "id": f"msg_{len(self.queue)}",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [{"type": "text", "text": text}],
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
            },
        )

    def ollama_chat(self, text: str, tokens_in: int = 7, tokens_out: int = 3) -> None:
        self.reply(
            200,
            {
                "model": "llama-test",
                "created_at": "2024-01-01T00:00:00Z",
                "message": {"role": "assistant", "content": text},
                "done": True,
                "done_reason": "stop",
                "prompt_eval_count": tokens_in,
                "eval_count": tokens_out,
            },
        )

    def embed(self, rows: list[list[float]]) -> None:
        self.reply(200, {"model": "embed-test", "embeddings": rows})


def _handler(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            server.requests.append(
                Received(
                    self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw)
                )
            )
            try:
                scripted = server.queue.popleft()
            except IndexError:
                scripted = Scripted(500, {"error": "no scripted answer left"})
            if scripted.delay_s and server.stop.wait(scripted.delay_s):
                return  # the test is over; the client gave up long ago
            payload = (
                scripted.body if isinstance(scripted.body, str) else json.dumps(scripted.body)
            ).encode()
            try:
                self.send_response(scripted.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    server = FakeServer(url="")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(server))
    httpd.daemon_threads = True
    server.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    yield server
    server.stop.set()
    httpd.shutdown()
    httpd.server_close()


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def anthropic_settings(url: str, **extra: Any) -> LLMSettings:
    return Settings.model_validate(
        {
            "llm": {
                "provider": "anthropic",
                "model": "claude-test",
                "anthropic_api_key": "sk-test",
                "anthropic_base_url": url,
                "timeout_s": 5,
                **extra,
            }
        }
    ).llm


def ollama_settings(url: str, **extra: Any) -> LLMSettings:
    return LLMSettings.model_validate(
        {"provider": "ollama", "model": "llama-test", "ollama_url": url, "timeout_s": 5, **extra}
    )


def call(llm: AnthropicLLM | OllamaLLM) -> Any:
    return llm.complete_json(system=SYSTEM, prompt="Judge the weather.", schema=Answer)


GOOD = '{"verdict": "sunny", "score": 7}'


# ---------------------------------------------------------------- anthropic


def test_anthropic_valid_answer_and_request_shape(fake: FakeServer) -> None:
    fake.anthropic(GOOD, tokens_in=12, tokens_out=4)
    result = call(AnthropicLLM(anthropic_settings(fake.url)))
    assert result.value == Answer(verdict="sunny", score=7)
    usage = result.usage
    assert (usage.provider, usage.model, usage.attempts) == ("anthropic", "claude-test", 1)
    assert (usage.tokens_in, usage.tokens_out) == (12, 4)
    assert usage.latency_ms > 0

    [request] = fake.requests
    assert request.path == "/v1/messages"
    assert request.body["model"] == "claude-test"
    assert request.body["max_tokens"] == 1024
    assert SYSTEM in request.body["system"]
    # the schema itself is in the instructions
    assert json.dumps(Answer.model_json_schema()) in request.body["system"]
    assert request.body["messages"] == [{"role": "user", "content": "Judge the weather."}]
    assert "sk-test" in request.headers.get("authorization", "") + request.headers.get(
        "x-api-key", ""
    )


def test_anthropic_fenced_answer_with_prose(fake: FakeServer) -> None:
    fake.anthropic(f"Sure! Here it is:\n```json\n{GOOD}\n```\nHope that helps.")
    result = call(AnthropicLLM(anthropic_settings(fake.url)))
    assert result.value.verdict == "sunny"
    assert result.usage.attempts == 1


def test_anthropic_retries_once_with_the_validation_error(fake: FakeServer) -> None:
    fake.anthropic('{"verdict": "sunny", "score": 42}', tokens_in=10, tokens_out=5)
    fake.anthropic(GOOD, tokens_in=30, tokens_out=6)
    result = call(AnthropicLLM(anthropic_settings(fake.url)))
    assert result.value.score == 7
    assert result.usage.attempts == 2
    assert (result.usage.tokens_in, result.usage.tokens_out) == (40, 11)

    retry = fake.requests[1].body["messages"]
    assert [m["role"] for m in retry] == ["user", "assistant", "user"]
    assert retry[1]["content"] == '{"verdict": "sunny", "score": 42}'
    assert "score" in retry[2]["content"]
    assert "less than or equal to 10" in retry[2]["content"]


def test_anthropic_invalid_json_then_valid(fake: FakeServer) -> None:
    fake.anthropic("I think it is sunny, score seven.")
    fake.anthropic(GOOD)
    result = call(AnthropicLLM(anthropic_settings(fake.url)))
    assert result.usage.attempts == 2
    assert "not valid JSON" in fake.requests[1].body["messages"][2]["content"]


def test_anthropic_always_invalid_raises_after_all_attempts(fake: FakeServer) -> None:
    for _ in range(3):
        fake.anthropic("not json at all", tokens_in=10, tokens_out=2)
    llm = AnthropicLLM(anthropic_settings(fake.url, max_retries=2))
    with pytest.raises(LLMError) as info:
        call(llm)
    assert len(fake.requests) == 3
    assert "anthropic" in str(info.value) and "claude-test" in str(info.value)
    assert "3 attempt" in str(info.value)
    assert info.value.usage is not None
    assert (info.value.usage.attempts, info.value.usage.tokens_in) == (3, 30)


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (500, {"type": "error", "error": {"type": "api_error", "message": "boom"}}, "HTTP 500"),
        (
            529,
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            "HTTP 529",
        ),
        (
            401,
            {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}},
            "ANTHROPIC_API_KEY",
        ),
    ],
)
def test_anthropic_http_errors(fake: FakeServer, status: int, body: Any, expected: str) -> None:
    fake.reply(status, body)
    with pytest.raises(LLMError) as info:
        call(AnthropicLLM(anthropic_settings(fake.url)))
    message = str(info.value)
    assert "anthropic" in message and "claude-test" in message and expected in message
    assert len(fake.requests) == 1  # the SDK's own retries are off
    assert info.value.usage is not None and info.value.usage.attempts == 1


def test_anthropic_connection_refused() -> None:
    url = closed_port_url()
    with pytest.raises(LLMError) as info:
        call(AnthropicLLM(anthropic_settings(url)))
    assert "anthropic" in str(info.value) and "cannot connect" in str(info.value)


def test_anthropic_timeout(fake: FakeServer) -> None:
    fake.reply(200, {}, delay_s=3)
    with pytest.raises(LLMError) as info:
        call(AnthropicLLM(anthropic_settings(fake.url, timeout_s=0.5)))
    assert "anthropic" in str(info.value) and "0.5s" in str(info.value)


# ---------------------------------------------------------------- ollama


def test_ollama_valid_answer_and_request_shape(fake: FakeServer) -> None:
    fake.ollama_chat(GOOD, tokens_in=20, tokens_out=8)
    result = call(OllamaLLM(ollama_settings(fake.url)))
    assert result.value == Answer(verdict="sunny", score=7)
    assert (result.usage.provider, result.usage.model) == ("ollama", "llama-test")
    assert (result.usage.tokens_in, result.usage.tokens_out, result.usage.attempts) == (20, 8, 1)

    [request] = fake.requests
    assert request.path == "/api/chat"
    body = request.body
    assert body["model"] == "llama-test"
    assert body["stream"] is False
    assert body["format"] == Answer.model_json_schema()
    assert body["options"]["temperature"] == 0
    assert body["messages"][0]["role"] == "system"
    assert SYSTEM in body["messages"][0]["content"]
    assert '"verdict"' in body["messages"][0]["content"]
    assert body["messages"][1] == {"role": "user", "content": "Judge the weather."}


def test_ollama_fenced_answer(fake: FakeServer) -> None:
    fake.ollama_chat(f"```json\n{GOOD}\n```")
    assert call(OllamaLLM(ollama_settings(fake.url))).value.score == 7


def test_ollama_retry_sums_usage(fake: FakeServer) -> None:
    fake.ollama_chat('{"verdict": "sunny"', tokens_in=5, tokens_out=5)
    fake.ollama_chat(GOOD, tokens_in=9, tokens_out=4)
    result = call(OllamaLLM(ollama_settings(fake.url)))
    assert result.usage.attempts == 2
    assert (result.usage.tokens_in, result.usage.tokens_out) == (14, 9)
    retry = fake.requests[1].body["messages"]
    assert [m["role"] for m in retry] == ["system", "user", "assistant", "user"]
    assert "rejected" in retry[3]["content"]


def test_ollama_always_invalid(fake: FakeServer) -> None:
    fake.ollama_chat('{"verdict": 1}')
    fake.ollama_chat('{"verdict": 2}')
    with pytest.raises(LLMError) as info:
        call(OllamaLLM(ollama_settings(fake.url, max_retries=1)))
    assert len(fake.requests) == 2
    assert "ollama" in str(info.value) and "Answer" in str(info.value)
    assert info.value.usage is not None and info.value.usage.attempts == 2


def test_ollama_http_500_and_missing_model(fake: FakeServer) -> None:
    fake.reply(500, {"error": "llama runner crashed"})
    with pytest.raises(LLMError) as info:
        call(OllamaLLM(ollama_settings(fake.url)))
    assert "ollama" in str(info.value) and "HTTP 500" in str(info.value)
    assert "llama runner crashed" in str(info.value)

    fake.reply(404, {"error": "model 'llama-test' not found"})
    with pytest.raises(LLMError, match="ollama pull llama-test"):
        call(OllamaLLM(ollama_settings(fake.url)))


def test_ollama_connection_refused() -> None:
    url = closed_port_url()
    with pytest.raises(LLMError) as info:
        call(OllamaLLM(ollama_settings(url)))
    assert "ollama" in str(info.value) and url in str(info.value)


def test_ollama_timeout(fake: FakeServer) -> None:
    fake.reply(200, {}, delay_s=3)
    with pytest.raises(LLMError) as info:
        call(OllamaLLM(ollama_settings(fake.url, timeout_s=0.5)))
    assert "ollama" in str(info.value) and "0.5s" in str(info.value)


# ---------------------------------------------------------------- build_llm and parsing


def test_build_llm() -> None:
    assert build_llm(LLMSettings()) is None
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY or llm.anthropic_api_key"):
        build_llm(LLMSettings.model_validate({"provider": "anthropic"}))
    assert isinstance(build_llm(anthropic_settings("http://127.0.0.1:9")), AnthropicLLM)
    assert isinstance(build_llm(ollama_settings("http://127.0.0.1:9")), OllamaLLM)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('Answer: {"a": {"b": "}"}} trailing', {"a": {"b": "}"}}),
        ('```json\n{"a": 2}\n```', {"a": 2}),
        ('the set {x} then {"a": 3}', {"a": 3}),
        ('```\n{"a": 4}\n```', {"a": 4}),
    ],
)
def test_extract_json_object(text: str, expected: dict[str, Any]) -> None:
    assert extract_json_object(text) == expected


@pytest.mark.parametrize("text", ["", "no json", "[1, 2]", '{"a": '])
def test_extract_json_object_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        extract_json_object(text)


# ---------------------------------------------------------------- ollama embedder


def embed_settings(url: str, **extra: Any) -> EmbeddingSettings:
    return EmbeddingSettings.model_validate(
        {
            "provider": "ollama",
            "model": "embed-test",
            "dim": 3,
            "ollama_url": url,
            "timeout_s": 5,
            **extra,
        }
    )


def test_embedder_batches_prefixes_and_normalises(fake: FakeServer) -> None:
    fake.embed([[3, 4, 0], [0, 0, 2]])
    fake.embed([[1, 1, 1], [0, 5, 0]])
    fake.embed([[0, 0, 0]])
    embedder = OllamaEmbedder(
        embed_settings(fake.url, batch_size=2, document_prefix="doc: ", query_prefix="q: ")
    )
    assert (embedder.model_name, embedder.dim) == ("embed-test", 3)
    vectors = embedder.embed_documents(["a", "b", "c", "d", "e"])

    assert vectors.dtype == np.float32 and vectors.shape == (5, 3)
    assert [r.path for r in fake.requests] == ["/api/embed"] * 3
    assert [r.body["input"] for r in fake.requests] == [
        ["doc: a", "doc: b"],
        ["doc: c", "doc: d"],
        ["doc: e"],
    ]
    assert all(r.body["model"] == "embed-test" for r in fake.requests)
    np.testing.assert_allclose(vectors[0], [0.6, 0.8, 0.0], rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors[:4], axis=1), 1.0, rtol=1e-6)
    assert not np.isnan(vectors).any()  # the zero row stays zero

    fake.embed([[0, 2, 0]])
    query = embedder.embed_queries(["where?"])
    assert fake.requests[-1].body["input"] == ["q: where?"]
    np.testing.assert_allclose(query, [[0, 1, 0]])


def test_embedder_empty_input_makes_no_request(fake: FakeServer) -> None:
    vectors = OllamaEmbedder(embed_settings(fake.url)).embed_documents([])
    assert vectors.shape == (0, 3)
    assert fake.requests == []


def test_embedder_wrong_dimension(fake: FakeServer) -> None:
    fake.embed([[1, 0, 0, 0]])
    with pytest.raises(EmbedderError, match="4-d vectors but embedding.dim is 3") as info:
        OllamaEmbedder(embed_settings(fake.url)).embed_queries(["x"])
    assert info.value.status_code == 503 and info.value.code == "embedder_unavailable"


def test_embedder_wrong_count(fake: FakeServer) -> None:
    fake.embed([[1, 0, 0]])
    with pytest.raises(EmbedderError, match="1 embeddings for 2 texts"):
        OllamaEmbedder(embed_settings(fake.url)).embed_documents(["x", "y"])


def test_embedder_connection_refused() -> None:
    url = closed_port_url()
    with pytest.raises(EmbedderError) as info:
        OllamaEmbedder(embed_settings(url)).embed_documents(["x"])
    assert url in str(info.value) and "embed-test" in str(info.value)


def test_embedder_http_error(fake: FakeServer) -> None:
    fake.reply(404, {"error": "model 'embed-test' not found"})
    with pytest.raises(EmbedderError, match="ollama pull embed-test"):
        OllamaEmbedder(embed_settings(fake.url)).embed_documents(["x"])
