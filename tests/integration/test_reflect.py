"""Reflect: routing, numbered sources, citations, and the no-LLM / LLM-down answers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from litestar.testing import TestClient

from app.config import Settings
from app.providers.llm import LLMError
from app.services.memory.commit import commit_note
from app.services.memory.schemas import NoteIn
from app.services.retrieval.reflect import (
    ReflectIn,
    ReflectSource,
    classify,
    context_block,
    reflect,
)
from app.services.runtime import Elephant
from tests.conftest import api_client, count_rows
from tests.fakes import ScriptedLLM

T = "reflector"
NOTES = [
    ("Dana adopted a greyhound named Comet on 3 March 2024", "2024-03-03"),
    ("Dana's favourite book is Piranesi by Susanna Clarke", "2023-11-20"),
    ("Dana moved from Leeds to Bristol in July 2022 for a job at Airbus", "2022-07-15"),
]


@pytest.fixture(scope="module")
def seeded(elephant: Elephant) -> Elephant:
    for text, when in NOTES:
        commit_note(elephant, T, NoteIn(text=text, occurred_at=when))
    return elephant


def with_llm(seeded: Elephant, llm: ScriptedLLM) -> Elephant:
    return Elephant(settings=seeded.settings, db=seeded.db, embedder=seeded.embedder, llm=llm)


@pytest.mark.parametrize(
    ("question", "route"),
    [
        ("When did Dana adopt Comet?", "temporal"),
        ("How long has Dana lived in Bristol?", "temporal"),
        ("What did Dana do in July 2022?", "temporal"),
        ("What is Dana's favourite book?", "factual"),
        ("Where does Dana work?", "factual"),
        ("Would Dana enjoy a fantasy novel?", "inference"),
        ("Why did Dana move to Bristol?", "inference"),
        ("Would Dana still live in Leeds if she had not joined Airbus in 2022?", "inference"),
    ],
)
def test_rule_based_routing(question: str, route: str) -> None:
    assert classify(question) == route


def test_without_an_llm_reflect_returns_sources_and_says_why(seeded: Elephant) -> None:
    result = reflect(seeded, T, ReflectIn(query="What is Dana's favourite book?"))
    assert result.answer is None and result.reflect_model is None
    assert isinstance(result.note, str) and "no LLM configured" in result.note
    assert result.route == "factual"
    assert result.sources[0].n == 1 and "Piranesi" in result.sources[0].text
    assert result.search_elapsed_ms > 0


def test_llm_answer_cites_numbered_sources(seeded: Elephant) -> None:
    llm = ScriptedLLM(
        {
            "Answer": [
                {"answer": "Comet was adopted on 3 March 2024 [1] [99].", "citations": [1, 99]}
            ]
        }
    )
    result = reflect(
        with_llm(seeded, llm), T, ReflectIn(query="When did Dana adopt Comet?", limit=3)
    )
    assert result.route == "temporal"
    assert result.answer is not None and result.answer.startswith("Comet was adopted")
    assert result.citations == [1]  # 99 names no source and is dropped
    cited = result.sources[0]
    assert "greyhound" in cited.text and cited.date == "2024-03-03"
    assert result.reflect_model == "scripted:fake-1"
    assert result.usage is not None and result.usage.tokens_in > 0
    schema, system, prompt = llm.calls[-1]
    assert schema == "Answer" and "absolute dates" in system
    assert "[1] (2024-03-03, api) Dana adopted a greyhound" in prompt
    assert count_rows(seeded.db, T, "llm_usage") >= 1


def test_llm_down_still_returns_sources(seeded: Elephant) -> None:
    llm = ScriptedLLM({"Answer": [LLMError("529 overloaded")]})
    result = reflect(with_llm(seeded, llm), T, ReflectIn(query="Why did Dana move to Bristol?"))
    assert result.route == "inference"
    assert result.answer is None and result.sources
    assert isinstance(result.note, str)
    assert "LLM unavailable" in result.note and "529" in result.note


def test_context_block_keeps_whole_sources_within_budget() -> None:
    sources = [
        ReflectSource(
            n=i, id=str(i), kind="note", date="2024-01-01", source="api", text="x" * 100, score=1.0
        )
        for i in range(1, 6)
    ]
    block, shown = context_block(sources, max_chars=300)
    assert shown == 2 and block.count("\n") == 1
    assert block.startswith("[1] (2024-01-01, api) ")


@pytest.fixture(scope="module")
def client(settings: Settings, seeded: Elephant) -> Iterator[TestClient]:  # type: ignore[type-arg]
    with api_client(settings, seeded) as test_client:
        yield test_client


def test_reflect_over_http(client: TestClient) -> None:  # type: ignore[type-arg]
    headers = {"X-Elephant-Tenant": T}
    ok = client.post("/reflect", json={"q": "Where did Dana move?"}, headers=headers)
    assert ok.status_code == 200, ok.text
    assert ok.json()["sources"] and ok.json()["route"] == "factual"
    for body in ({"q": ""}, {"q": "x", "limit": 0}, {"question": "x"}):
        bad = client.post("/reflect", json=body, headers=headers)
        assert bad.status_code == 422, bad.text
