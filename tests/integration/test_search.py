"""The read path on the real database and embedder: lanes, filters, fusion, explain, API."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from litestar.testing import TestClient

from app.config import Settings
from app.providers.llm import LLMError
from app.services.memory.commit import commit_conversation, commit_note
from app.services.memory.schemas import ConversationIn, NoteIn
from app.services.retrieval.access_stats import AccessRecorder
from app.services.retrieval.diversity import estimated_tokens
from app.services.retrieval.schemas import SearchRequest
from app.services.retrieval.search import prepare, search, statement, statement_params
from app.services.runtime import Elephant
from tests.conftest import MANAGED, api_client, needs_bm25
from tests.fakes import ScriptedLLM

Client = TestClient  # type: ignore[type-arg]
T = "searcher"

NOTES = [
    ("Priya's cat Biscuit is allergic to chicken, so she buys salmon kibble", "vet", "2023-03-02"),
    (
        "The team chose Postgres 18 with pgvector for the memory service in June 2025",
        "work",
        "2025-06-10",
    ),
    ("Priya runs the Lisbon half marathon every October", "chat", "2022-10-16"),
    ("Zebulon keeps a zymurgy journal about his sourdough starter", "chat", "2024-01-05"),
]
CONVERSATION = {
    "session_date": "1:56 pm on 8 May, 2023",
    "conversation_id": "s1",
    "source": "chat",
    "turns": [
        {
            "speaker": "Caroline",
            "text": "I went to a LGBTQ support group yesterday and it was so powerful.",
            "id": "D1:3",
        },
        {
            "speaker": "Melanie",
            "text": "I painted a sunrise over the lake last week.",
            "id": "D1:4",
        },
        {
            "speaker": "Caroline",
            "text": "I want to study counseling and mental health.",
            "id": "D1:5",
        },
    ],
}


@pytest.fixture(scope="module")
def seeded(elephant: Elephant) -> Elephant:
    for text, source, when in NOTES:
        commit_note(elephant, T, NoteIn(text=text, source=source, occurred_at=when), wait=True)
    commit_conversation(elephant, T, ConversationIn.model_validate(CONVERSATION), wait=True)
    commit_note(
        elephant, T, NoteIn(text="Alice lives in Paris", occurred_at="2021-03-01"), wait=True
    )
    commit_note(
        elephant, T, NoteIn(text="Alice moved to Berlin", occurred_at="2024-06-01"), wait=True
    )
    commit_note(elephant, "intruder", NoteIn(text="Priya's cat Biscuit is secretly a dog"))
    return elephant


@pytest.fixture(scope="module")
def client(settings: Settings, seeded: Elephant) -> Iterator[Client]:
    with api_client(settings, seeded) as test_client:
        yield test_client


def run(elephant: Elephant, query: str, tenant: str = T, **fields: Any) -> list[Any]:
    return search(elephant, tenant, SearchRequest(query=query, **fields)).hits


def test_empty_tenant_gives_empty_results(seeded: Elephant) -> None:
    result = search(seeded, "nobody-here", SearchRequest(query="anything at all", explain=True))
    assert result.hits == []
    assert result.explain is not None


def test_finds_the_right_memory_first_and_reports_lane_ranks(seeded: Elephant) -> None:
    hits = run(seeded, "What is Biscuit allergic to?")
    assert "allergic to chicken" in hits[0].text
    assert hits[0].ranks.windows == 1 or hits[0].ranks.facts == 1
    assert all(hit.text != "Priya's cat Biscuit is secretly a dog" for hit in hits)  # other tenant


def test_facts_carry_dates_and_turn_ids(seeded: Elephant) -> None:
    hits = run(
        seeded, "When did Caroline go to the support group?", limit=20, filters={"kind": "fact"}
    )
    assert hits and all(hit.kind == "fact" for hit in hits)
    fact = next(hit for hit in hits if "support group" in hit.text)
    assert fact.source_turn_ids == ["D1:3"]
    assert fact.event_at is not None and fact.event_at.date().isoformat() == "2023-05-07"


def test_source_and_kind_filters(seeded: Elephant) -> None:
    hits = run(seeded, "Postgres pgvector memory service", limit=50, filters={"source": "work"})
    assert hits and {hit.source for hit in hits} == {"work"}
    windows = run(seeded, "support group", limit=50, filters={"kind": "window"})
    assert windows and {hit.kind for hit in windows} == {"window"}
    notes_and_facts = run(seeded, "support group", limit=50, filters={"kind": ["note", "fact"]})
    assert {hit.kind for hit in notes_and_facts} <= {"note", "fact"}


def test_time_range_filters(seeded: Elephant) -> None:
    hits = run(
        seeded,
        "Priya",
        limit=50,
        filters={"kind": "note", "event_after": "2023-01-01", "event_before": "2023-12-31"},
    )
    assert [hit.text for hit in hits] == [NOTES[0][0]]
    future = run(seeded, "Priya", limit=50, filters={"created_after": "2999-01-01"})
    assert future == []


def test_as_of_hides_a_superseded_fact_and_include_expired_shows_it(seeded: Elephant) -> None:
    query = "Where does Alice live?"
    current = run(seeded, query, limit=50, filters={"kind": "fact"})
    texts = [hit.text for hit in current]
    assert any("Berlin" in t for t in texts) and not any("Paris" in t for t in texts)
    expired = run(seeded, query, limit=50, filters={"kind": "fact", "include_expired": True})
    paris = [hit for hit in expired if "Paris" in hit.text]
    assert paris and paris[0].status == "superseded" and paris[0].valid_to is not None
    in_2022 = run(seeded, query, limit=50, filters={"kind": "fact", "as_of": "2022-01-01"})
    assert [("Paris" in h.text, "Berlin" in h.text) for h in in_2022] == [(True, False)]
    in_2025 = run(seeded, query, limit=50, filters={"kind": "fact", "as_of": "2025-01-01"})
    assert any("Berlin" in h.text for h in in_2025) and not any("Paris" in h.text for h in in_2025)


@needs_bm25
def test_keyword_lane_with_bm25_and_with_tsvector(seeded: Elephant, settings: Settings) -> None:
    lanes = {"windows": 0, "facts": 0, "keyword": 10}
    bm25 = search(seeded, T, SearchRequest(query="zymurgy", lanes=lanes, explain=True))
    assert bm25.explain is not None and bm25.explain.keyword_engine == "bm25"
    assert bm25.hits and "zymurgy" in bm25.hits[0].text
    found_in = msgspec.structs.asdict(bm25.hits[0].ranks)
    assert {lane: rank for lane, rank in found_in.items() if rank is not None} == {"keyword": 1}
    fallback_settings = settings.model_copy(
        update={"search": settings.search.model_copy(update={"keyword_engine": "tsvector"})}
    )
    fallback = Elephant(
        settings=fallback_settings, db=seeded.db, embedder=seeded.embedder, llm=None
    )
    tsv = search(fallback, T, SearchRequest(query="What about zymurgy?", lanes=lanes, explain=True))
    assert tsv.explain is not None and tsv.explain.keyword_engine == "tsvector"
    assert tsv.hits and "zymurgy" in tsv.hits[0].text


def test_expansion_adds_name_variants(seeded: Elephant) -> None:
    result = search(
        seeded, T, SearchRequest(query="What did Melanie paint?", expand=True, explain=True)
    )
    assert result.variants[:3] == ["What did Melanie paint?", "Melanie", "What did paint?"]
    assert result.explain is not None and result.explain.variants == result.variants
    assert any(len(hit.variants) > 1 for hit in result.hits)  # found through several variants
    assert any("sunrise" in hit.text for hit in result.hits[:3])
    plain = search(seeded, T, SearchRequest(query="What did Melanie paint?", explain=True))
    assert plain.variants == ["What did Melanie paint?"]  # search.expand is off by default


def test_a_question_about_two_people_is_searched_for_each_of_them(seeded: Elephant) -> None:
    question = "What are Zebulon and Melanie both doing?"
    result = search(seeded, T, SearchRequest(query=question, limit=5, explain=True))
    subs = ["What is Zebulon doing?", "What is Melanie doing?"]
    assert result.explain is not None and result.explain.sub_queries == subs
    assert result.variants == [question, *subs]
    # each person's own memory is among the first results, found through their sub-query
    zebulon = next(hit for hit in result.hits if "zymurgy" in hit.text)
    melanie = next(hit for hit in result.hits if "sunrise" in hit.text)
    assert 2 in zebulon.variants and 3 in melanie.variants
    whole = search(seeded, T, SearchRequest(query=question, decompose=False, explain=True))
    assert whole.variants == [question] and whole.explain is not None
    assert whole.explain.sub_queries == []


def test_with_an_llm_its_sub_queries_replace_the_rules_and_are_cached(
    seeded: Elephant, settings: Settings
) -> None:
    question = "What are Zebulon and Melanie both doing?"
    llm = ScriptedLLM(
        {"SubQueries": [{"sub_queries": ["Zebulon's hobby", "Melanie's art"]}, LLMError("down")]}
    )
    asking = settings.model_copy(
        update={"search": settings.search.model_copy(update={"decompose_llm": True})}
    )
    elephant = Elephant(settings=asking, db=seeded.db, embedder=seeded.embedder, llm=llm)
    first = search(elephant, T, SearchRequest(query=question, explain=True))
    assert first.explain is not None and first.explain.sub_queries_from == "llm"
    assert first.variants == [question, "Zebulon's hobby", "Melanie's art"]
    again = search(elephant, T, SearchRequest(query=question, explain=True))
    assert again.variants == first.variants and len(llm.calls) == 1  # cached
    # the LLM fails: the rules answer, and the failed call is recorded
    other = search(elephant, T, SearchRequest(query="Where do Priya and Alice live?", explain=True))
    assert other.explain is not None and other.explain.sub_queries_from == "rules"
    assert other.explain.sub_queries == ["Where does Priya live?", "Where does Alice live?"]
    elephant.access.flush()
    with seeded.db.tenant(T) as conn:
        rows = conn.execute(
            "SELECT ok FROM llm_usage WHERE operation = 'decompose' ORDER BY id"
        ).fetchall()
    assert [row[0] for row in rows] == [True, False]


def test_the_names_expansion_reads_are_cached_until_the_tenant_writes(
    seeded: Elephant,
) -> None:
    """Expansion needs the tenant's speakers and subjects: read once, then again only
    after a write of that tenant (a new memory or fact), in any process."""
    tenant = "names-cache"
    commit_conversation(
        seeded,
        tenant,
        ConversationIn.model_validate(
            {"turns": [{"speaker": "Oriane", "text": "I restore clocks in Lyon."}]}
        ),
        wait=True,
    )
    cache = seeded.names
    with seeded.db.reading(tenant) as conn:
        first = cache.get(conn, tenant)
    assert "Oriane" in first
    with seeded.db.reading(tenant) as conn:
        assert cache.get(conn, tenant) is first  # nothing written: the same list
    commit_conversation(
        seeded,
        tenant,
        ConversationIn.model_validate(
            {"turns": [{"speaker": "Bastien", "text": "I build harpsichords in Nantes."}]}
        ),
        wait=True,
    )
    with seeded.db.reading(tenant) as conn:
        again = cache.get(conn, tenant)
    assert again is not first and {"Oriane", "Bastien"} <= set(again)
    with seeded.db.reading(T) as conn:
        assert "Bastien" not in cache.get(conn, T)  # per tenant


def test_explain_reports_timings_lanes_and_prior(seeded: Elephant) -> None:
    result = search(seeded, T, SearchRequest(query="Biscuit", explain=True, recency_weight=0.5))
    assert result.explain is not None
    timings = result.explain.timings_ms
    assert timings.total >= timings.sql > 0 and timings.embedding > 0
    assert result.explain.lanes == {
        "windows": 45,
        "facts": 15,
        "keyword_memories": 10,
        "keyword_facts": 10,
        # Biscuit is an entity of the seeded facts, but its only edges are the
        # co-occurrence `mentions` ingest adds, which the graph lane does not follow.
        "graph": 0,
        "preferences": 2,
        # the structure lanes, off by default (docs/search.md)
        "entity_expansion_memories": 0,
        "entity_expansion_facts": 0,
        "entity_match_memories": 0,
        "entity_match_facts": 0,
        "neighbours": 0,
        "timeline": 0,
    }
    assert "biscuit" in result.explain.graph.named
    assert result.explain.graph.neighbours == []
    assert result.explain.recency_prior.on is True
    assert all(hit.prior > 0 for hit in result.hits)
    body = msgspec.to_builtins(result.response())
    assert {"rrf", "prior", "variants", "ranks"} <= set(body["results"][0])
    off = search(seeded, T, SearchRequest(query="Biscuit", explain=True))
    assert off.explain is not None and off.explain.recency_prior.on is False
    assert all(hit.prior == 0 for hit in off.hits)


def test_recency_prior_lifts_newer_memories(seeded: Elephant, settings: Settings) -> None:
    query = "Priya"
    decade = settings.model_copy(
        update={"search": settings.search.model_copy(update={"half_life_days": 3650.0})}
    )
    slow_decay = Elephant(settings=decade, db=seeded.db, embedder=seeded.embedder, llm=None)
    plain = run(slow_decay, query, limit=10, filters={"kind": "note"}, expand=False)
    recent = run(
        slow_decay, query, limit=10, filters={"kind": "note"}, expand=False, recency_weight=1.0
    )
    assert {h.id for h in plain} == {h.id for h in recent}
    newest = max(recent, key=lambda h: h.event_at)
    assert recent[0].id == newest.id


@needs_bm25
def test_every_lane_uses_its_index(seeded: Elephant) -> None:
    variants = ["What did Melanie paint?", "Melanie"]
    vectors = seeded.embedder.embed_queries(variants)
    params = statement_params(
        seeded, SearchRequest(query=variants[0]), variants, vectors, "bm25", tenant=T, way="shared"
    )
    with seeded.db.tenant(T) as conn:
        prepare(conn, seeded, 45)
        plan = "\n".join(
            row[0] for row in conn.execute("EXPLAIN " + statement("bm25"), params).fetchall()
        )
    for index in (
        "memories_embedding_hnsw",
        "facts_embedding_hnsw",
        "memories_text_bm25",
        "facts_text_bm25",
    ):
        assert f"Index Scan using {index}" in plan, plan


def test_access_statistics_are_recorded_aside_and_the_rows_stay_untouched(
    seeded: Elephant, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search writes no memory or fact row (their xmin stays), its uses land in
    access_stats when the batch is written, and a search of a hit twice counts twice."""
    # a recorder whose timer never fires inside the test: only flush() writes a batch
    recorder = AccessRecorder(seeded.db, flush_seconds=3600)
    monkeypatch.setattr(seeded, "access", recorder)
    hits = run(seeded, "sourdough starter journal", limit=3)
    table = "facts" if hits[0].kind == "fact" else "memories"

    def row_versions() -> list[tuple[str, str]]:
        with seeded.db.admin_connection() as conn:
            rows = conn.execute(
                "SELECT id::text, xmin::text FROM memories UNION ALL "
                "SELECT id::text, xmin::text FROM facts ORDER BY 1"
            ).fetchall()
        return [(str(r[0]), str(r[1])) for r in rows]

    def uses(item: str) -> tuple[int, bool] | None:
        with seeded.db.tenant(T) as conn:
            row = conn.execute(
                "SELECT access_count, last_accessed_at IS NOT NULL FROM access_stats "
                "WHERE item_id = %s",
                (item,),
            ).fetchone()
        return None if row is None else (int(row[0]), bool(row[1]))

    seeded.access.flush()
    before, counted = row_versions(), uses(hits[0].id)
    assert counted is not None and counted[0] >= 1 and counted[1], table
    run(seeded, "sourdough starter journal", limit=3)
    run(seeded, "sourdough starter journal", limit=3)
    assert uses(hits[0].id) == counted  # not yet: batched
    seeded.access.flush()
    assert uses(hits[0].id) == (counted[0] + 2, True)
    assert row_versions() == before, "a search rewrote memory or fact rows"
    recorder.close()


# ------------------------------------------------------------------ HTTP


def get(client: Client, path: str, **params: Any) -> Any:
    return client.get(path, params=params, headers={"X-Elephant-Tenant": T})


def test_get_and_post_search_over_http(client: Client) -> None:
    response = get(client, "/search", q="What is Biscuit allergic to?", limit=3, source="vet")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["count"] >= 1 and all(r["source"] == "vet" for r in body["results"])
    long_query = "Biscuit the cat and his allergies " * 400  # ~14k characters: POST, no 414
    posted = client.post(
        "/search",
        json={"query": long_query, "limit": 5, "explain": True},
        headers={"X-Elephant-Tenant": T},
    )
    assert posted.status_code == 200, posted.text
    assert set(posted.json()["explain"]["timings_ms"]) == {"embedding", "sql", "total"}


@pytest.mark.parametrize(
    ("method", "params", "fragment"),
    [
        ("get", {"q": "x", "limit": 0}, "limit"),
        ("get", {"q": "x", "limit": 201}, "limit"),
        ("get", {"limit": 5}, "q"),
        ("get", {"q": "x" * 2001}, "q"),
        ("post", {"query": "x", "limit": 500}, "limit"),
        ("post", {"query": "x", "colour": "red"}, "colour"),
        ("post", {"query": ""}, "query"),
        ("post", {"query": "x", "lanes": {"windows": -1}}, "windows"),
        ("post", {"query": "x", "filters": {"kind": "tweet"}}, "kind"),
        ("post", {"query": "x", "filters": {"as_of": "someday"}}, "as_of"),
    ],
)
def test_bad_search_parameters_are_422(
    client: Client, method: str, params: dict[str, Any], fragment: str
) -> None:
    if method == "get":
        response = get(client, "/search", **params)
    else:
        response = client.post("/search", json=params, headers={"X-Elephant-Tenant": T})
    assert response.status_code == 422, response.text
    assert fragment in response.json()["message"]


def test_stats(client: Client) -> None:
    body = get(client, "/stats").json()
    assert body["memories"]["by_kind"]["note"] == len(NOTES) + 2
    assert body["memories"]["by_kind"]["window"] >= 1
    assert body["memories"]["by_source"]["vet"] == 1
    assert body["facts"]["by_status"]["superseded"] >= 1
    assert body["turns"] == 3 and body["conversations"] == 1
    names = {index["name"] for index in body["storage"]["indexes"]}
    keyword_index = "facts_tsv_gin" if MANAGED else "facts_text_bm25"
    assert {"memories_embedding_hnsw", keyword_index} <= names
    assert all(index["valid"] for index in body["storage"]["indexes"])


def test_proactive_suggests_what_the_conversation_lacks(client: Client, seeded: Elephant) -> None:
    pro = {"X-Elephant-Tenant": "pro"}
    for text, source, when in NOTES:
        commit_note(seeded, "pro", NoteIn(text=text, source=source, occurred_at=when))
    messages = ["I'm at the pet shop buying food for Biscuit.", "What should I get him?"]
    first = client.post("/proactive", json={"messages": messages, "max_results": 3}, headers=pro)
    assert first.status_code == 200, first.text
    texts = [s["text"] for s in first.json()["suggestions"]]
    assert any("allergic to chicken" in t for t in texts)
    seeded.access.flush()
    again = client.post(
        "/proactive", json={"messages": messages, "max_results": 3}, headers=pro
    ).json()
    assert not any("allergic to chicken" in s["text"] for s in again["suggestions"])
    assert again["skipped"]["recently_accessed"] >= 1
    echo = client.post(
        "/proactive",
        json={"messages": ["Zebulon keeps a zymurgy journal about his sourdough starter"]},
        headers=pro,
    ).json()
    assert not any("zymurgy journal" in s["text"] for s in echo["suggestions"])
    assert echo["skipped"]["already_in_conversation"] >= 1
    bad = client.post("/proactive", json={"messages": []}, headers=pro)
    assert bad.status_code == 422


def repeats_of(hits: list[Any]) -> list[bool]:
    """Per hit: do all its source turns appear in hits above it?"""
    covered: set[str] = set()
    flags = []
    for hit in hits:
        turns = set(hit.source_turn_ids)
        flags.append(bool(turns) and turns <= covered)
        covered |= turns
    return flags


def test_results_that_repeat_shown_turns_go_below_new_turns(seeded: Elephant) -> None:
    """Facts extracted from a window's turns cannot sit ahead of a result bringing another
    turn; turned off, the fused order comes back with its repeats in place."""
    query = "What did Caroline do at the support group and what does she want to study?"
    plain = run(seeded, query, limit=60, diversify=False)
    diverse = run(seeded, query, limit=60, diversify=True)
    assert {hit.id for hit in diverse} == {hit.id for hit in plain}  # the whole tenant: reordered
    flags = repeats_of(diverse)
    assert flags == sorted(flags), f"a result bringing new turns sits below a repeat: {flags}"
    plain_flags = repeats_of(plain)
    assert plain_flags != sorted(plain_flags), "the fixture no longer has a repeat to move"
    assert [h.score for h in plain] == sorted((h.score for h in plain), reverse=True)


def test_max_tokens_fills_a_budget_instead_of_a_count(seeded: Elephant) -> None:
    query = "What did Caroline do at the support group and what does she want to study?"
    for budget in (30, 120, 400):
        result = search(seeded, T, SearchRequest(query=query, max_tokens=budget, explain=True))
        used = sum(estimated_tokens(hit.text) for hit in result.hits)
        assert 0 < used <= budget, (budget, used)
        assert result.explain is not None and result.explain.tokens == used
        assert result.explain.max_tokens == budget
        assert not any(repeats_of(result.hits)), "a result that only repeats turns used budget"
        scores = [hit.score for hit in result.hits]
        assert scores == sorted(scores, reverse=True)  # still in rank order
    small = run(seeded, query, max_tokens=30)
    large = run(seeded, query, max_tokens=4000)
    assert len(small) < len(large)
    # no limit given: the budget, not search.default_limit, caps
    few_settings = seeded.settings.search.model_copy(update={"default_limit": 3})
    few = Elephant(
        settings=seeded.settings.model_copy(update={"search": few_settings}),
        db=seeded.db,
        embedder=seeded.embedder,
        llm=None,
    )
    assert len(run(few, query, max_tokens=4000)) > len(run(few, query)) == 3
    assert len(run(seeded, query, max_tokens=4000, limit=3)) == 3


QUESTIONS = [
    "What did Caroline do at the support group?",
    "Which cat food does Biscuit eat?",
    "Where does Alice live now?",
    "What did Melanie paint?",
    "Which database did the team choose?",
    "What is Zebulon's journal about?",
    "When does Priya run the half marathon?",
]


def test_the_keyword_lanes_best_memory_goes_first_from_the_top_three(
    seeded: Elephant, settings: Settings
) -> None:
    off = settings.model_copy(
        update={"search": settings.search.model_copy(update={"keyword_first_within": 0})}
    )
    plain = Elephant(settings=off, db=seeded.db, embedder=seeded.embedder, llm=None)
    moved = 0
    for question in QUESTIONS:
        shipped = run(seeded, question, limit=10)
        fused = run(plain, question, limit=10)
        best = [
            i
            for i, hit in enumerate(fused[:3])
            if hit.kind != "fact" and hit.ranks.keyword == 1 and not hit.superseded_by
        ]
        if best and any(hit.prior > fused[best[0]].prior for hit in fused[: best[0]]):
            best = []  # a result above it leads by a prior: the order stands
        if best:
            first = fused[best[0]]
            assert shipped[0].id == first.id, question
            rest = [hit.id for hit in fused if hit.id != first.id]
            assert [hit.id for hit in shipped[1:]] == rest, question
            moved += best[0] > 0
        else:
            assert [hit.id for hit in shipped] == [hit.id for hit in fused], question
    # This seed's one keyword-best below fusion's first is the Paris note, superseded by
    # the Berlin note: about the present it is not lifted (test_search_trust.py); the move
    # itself is tests/unit/test_diversity.py's.
    alice = run(seeded, "Where does Alice live now?", limit=10)
    assert moved or ("Berlin" in alice[0].text and any(hit.superseded_by for hit in alice))
