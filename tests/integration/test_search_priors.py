"""Soft priors of search: dates the question names, and lower trust for what an assistant said."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.config import Settings
from app.services.memory.commit import commit_note
from app.services.memory.schemas import NoteIn
from app.services.retrieval.query_dates import question_dates
from app.services.retrieval.schemas import SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant
from tests.conftest import make_settings

HIKES = {
    "alps": (
        "Jon went hiking in the mountains with his brother.",
        datetime(2023, 6, 10, tzinfo=UTC),
    ),
    "fjords": (
        "Jon went hiking in the mountains with his sister.",
        datetime(2023, 9, 12, tzinfo=UTC),
    ),
}


@pytest.fixture(scope="module")
def settings(pg_data_dir: Path, new_database: Callable[..., str]) -> Settings:
    return make_settings(pg_data_dir, embedded={"database": new_database("priors")})


@pytest.fixture(scope="module")
def hikes(elephant: Elephant) -> dict[str, str]:
    ids = {}
    for name, (text, when) in HIKES.items():
        result = commit_note(elephant, "hikes", NoteIn(text=text, occurred_at=when, force=True))
        assert result.memory_id is not None
        ids[name] = result.memory_id
    return ids


def with_search(elephant: Elephant, **changes: float) -> Elephant:
    search_settings = elephant.settings.search.model_copy(update=changes)
    return Elephant(
        settings=elephant.settings.model_copy(update={"search": search_settings}),
        db=elephant.db,
        embedder=elephant.embedder,
        llm=None,
    )


def first_hike(elephant: Elephant, query: str, asked_at: datetime | None = None) -> str:
    request = SearchRequest(query=query, limit=2, asked_at=asked_at, filters={"kind": "note"})
    return search(elephant, "hikes", request, record_access=False).hits[0].id


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Who did Jon go hiking with in June 2023?", "alps"),
        ("Who did Jon go hiking with in September 2023?", "fjords"),
        ("Who did Jon go hiking with between 8 and 11 June 2023?", "alps"),
        ("Who did Jon go hiking with on 12 September 2023?", "fjords"),
    ],
)
def test_a_date_in_the_question_lifts_what_happened_then(
    elephant: Elephant, hikes: dict[str, str], query: str, expected: str
) -> None:
    assert first_hike(elephant, query) == hikes[expected]


def test_relative_dates_resolve_against_when_the_question_is_asked(
    elephant: Elephant, hikes: dict[str, str]
) -> None:
    query = "Who did Jon go hiking with last week?"
    assert first_hike(elephant, query, datetime(2023, 6, 14, tzinfo=UTC)) == hikes["alps"]
    assert first_hike(elephant, query, datetime(2023, 9, 18, tzinfo=UTC)) == hikes["fjords"]


def test_the_date_prior_is_explained_and_can_be_switched_off(
    elephant: Elephant, hikes: dict[str, str]
) -> None:
    request = SearchRequest(query="Jon hiking in September 2023", explain=True, limit=2)
    result = search(elephant, "hikes", request, record_access=False)
    assert result.explain is not None and result.explain.date_prior is not None
    assert result.explain.date_prior.phrases == ["September 2023"]
    lifted = next(hit for hit in result.hits if hit.id == hikes["fjords"])
    other = next(hit for hit in result.hits if hit.id == hikes["alps"])
    rrf_k = elephant.settings.search.rrf_k
    assert lifted.prior - other.prior == pytest.approx(0.5 / (rrf_k + 1))
    off = search(with_search(elephant, date_weight=0.0), "hikes", request, record_access=False)
    assert off.explain is not None and off.explain.date_prior is None
    assert all(hit.prior == 0 for hit in off.hits)


def test_question_dates_reads_ranges_and_ignores_questions_without_dates() -> None:
    asked = datetime(2023, 9, 1, tzinfo=UTC)
    span = question_dates("What did Caroline do between August 11 and 15?", asked)
    assert span is not None
    assert (span.start, span.end) == (
        datetime(2023, 8, 11, tzinfo=UTC),
        datetime(2023, 8, 16, tzinfo=UTC),
    )
    assert span.after < span.start and span.before > span.end
    assert question_dates("Who is Caroline's best friend?", asked) is None
    assert question_dates("Which restaurant for dinner on Friday?", asked) is None  # a plan?
    assert question_dates("What did we eat last Friday?", asked) is not None


def test_facts_an_assistant_said_weigh_less(elephant: Elephant) -> None:
    texts = {
        "user": "Maya booked the Hoshinoya ryokan in Kyoto for 800 dollars a night",
        "assistant": "Maya can book the Hoshinoya ryokan in Kyoto for 800 dollars a night",
    }
    vectors = elephant.embedder.embed_documents(list(texts.values()))
    ids = {}
    with elephant.db.tenant("trust") as conn:
        for (who, text), vector in zip(texts.items(), vectors, strict=True):
            metadata = {"said_by": "assistant"} if who == "assistant" else {}
            row = conn.execute(
                "INSERT INTO facts (tenant_id, subject, text, embedding, content_hash, metadata) "
                "VALUES ('trust', 'Maya', %s, %s, md5(%s), %s) RETURNING id",
                (text, vector, text, json.dumps(metadata)),
            ).fetchone()
            assert row is not None
            ids[who] = str(row[0])
    request = SearchRequest(query="How much is the Kyoto ryokan per night?", explain=True)

    def rrf_of(engine: Elephant) -> dict[str, float]:
        hits = search(engine, "trust", request, record_access=False).hits
        return {who: next(h.rrf for h in hits if h.id == fact) for who, fact in ids.items()}

    alike = rrf_of(with_search(elephant, assistant_fact_weight=1.0))
    lowered = rrf_of(elephant)
    assert lowered["user"] == pytest.approx(alike["user"])
    assert lowered["assistant"] == pytest.approx(alike["assistant"] * 0.5)
    hits = search(elephant, "trust", request, record_access=False).hits
    assert [h.id for h in hits].index(ids["user"]) < [h.id for h in hits].index(ids["assistant"])
