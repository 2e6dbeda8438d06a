"""A conversation commit reads every turn through the model once: its windows' vectors are
pooled from the turns' token sums (embedding.window_vectors = pooled, the default), or read
again from the window's text (model), and both are what search finds the window by."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from app.providers.embedder import LocalEmbedder, normalised
from app.services.memory.commit import commit_conversation
from app.services.memory.passages import turn_passages
from app.services.memory.schemas import ConversationIn
from app.services.retrieval.schemas import SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant

TURNS = [
    ("Maya", "I lost my car keys at the gym last week."),
    ("Sam", "Did you check the lost and found at the front desk?"),
    ("Maya", "Yes, they had them! Someone handed them in on Tuesday."),
    ("Sam", "Great. Are you still training for the Lisbon half marathon in October?"),
    ("Maya", "I am. My coach wants me running 40 kilometres a week by August."),
    ("Sam", "That is a lot. How is your knee holding up after the physio?"),
    ("Maya", "Much better since I started the strength exercises twice a week."),
    ("Sam", "Good to hear. Remember to book the hotel near the start line early."),
]


def conversation(conversation_id: str) -> ConversationIn:
    return ConversationIn.model_validate(
        {
            "conversation_id": conversation_id,
            "session_date": "2024-05-08T10:00:00Z",
            "turns": [{"speaker": s, "text": t} for s, t in TURNS],
            "force": True,
        }
    )


class Reading:
    """The real embedder, recording every text the model is asked to read."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self.inner, self.model_name, self.dim = inner, inner.model_name, inner.dim
        self.read: list[str] = []

    def embed_documents(self, texts: Any) -> Any:
        self.read.extend(texts)
        return self.inner.embed_documents(texts)

    def embed_queries(self, texts: Any) -> Any:
        return self.inner.embed_queries(texts)

    def embed_document_sums(self, texts: Any) -> Any:
        self.read.extend(texts)
        return self.inner.embed_document_sums(texts)


def stored(elephant: Elephant, tenant: str) -> list[tuple[str, np.ndarray, int, int]]:
    with elephant.db.tenant(tenant) as conn:
        rows = conn.execute(
            "SELECT text, embedding, turn_start, turn_end FROM memories "
            "WHERE kind = 'window' AND tenant_id = %s ORDER BY turn_start",
            (tenant,),
        ).fetchall()
    return [
        (text, np.asarray(vector.to_numpy(), dtype=np.float32), a, b) for text, vector, a, b in rows
    ]


@pytest.mark.parametrize("mode", ["pooled", "model"])
def test_window_vectors_by_mode(elephant: Elephant, mode: str) -> None:
    tenant = f"windows-{mode}"
    inner = elephant.embedder
    assert isinstance(inner, LocalEmbedder)
    reading = Reading(inner)
    settings = elephant.settings.model_copy(
        update={
            "embedding": elephant.settings.embedding.model_copy(update={"window_vectors": mode})
        }
    )
    runtime = Elephant(settings=settings, db=elephant.db, embedder=reading, llm=None)
    try:
        check(runtime, elephant, reading, inner, tenant, mode)
    finally:
        runtime.close_providers()


def check(
    runtime: Elephant,
    elephant: Elephant,
    reading: Reading,
    inner: LocalEmbedder,
    tenant: str,
    mode: str,
) -> None:
    result = commit_conversation(runtime, tenant, conversation(f"c-{mode}"))
    windows = stored(elephant, tenant)
    assert len(windows) == len(result.windows) >= 3

    turns = [p.text for p in turn_passages(_window_turns(runtime), 48)]
    if mode == "pooled":
        assert reading.read == turns, "the model reads each turn once and no window"
        sums = inner.embed_document_sums(turns).sums
        for _text, vector, start, end in windows:
            expected = normalised(sums[start : end + 1].sum(axis=0, keepdims=True))[0]
            assert float(vector @ expected) >= 0.9999
    else:
        assert set(reading.read) == {w[0] for w in windows} | set(turns)
        for text, vector, _start, _end in windows:
            assert float(vector @ inner.embed_documents([text])[0]) >= 0.9999

    query = SearchRequest(query="Where is Maya running a half marathon?")
    found = search(runtime, tenant, query).response().results
    assert any("Lisbon half marathon" in hit.text for hit in found[:3])


def _window_turns(elephant: Elephant) -> list[Any]:
    from app.services.memory.commit import _window_turns as turns_of

    return turns_of(conversation("any"))
