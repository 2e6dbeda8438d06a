"""The entity lanes of hybrid search (sql/retrieval/entity_expansion_lane.sql,
entity_match_lane.sql) on the real stack: a memory that shares a named entity with a hit
comes in though no text lane ranks it; hubs are not followed; size 0 is off; another
tenant's rows never come in; explain shows the lanes."""

from __future__ import annotations

from typing import Any

from app.services.memory.commit import commit_note
from app.services.memory.schemas import NoteIn
from app.services.retrieval.lanes import rank_in
from app.services.retrieval.schemas import SearchHit, SearchRequest, SearchResult
from app.services.retrieval.search import search
from app.services.runtime import Elephant

TENANT = "entity-lanes"
OTHER = "entity-lanes-other"
ADOPTED = "Dana adopted a greyhound named Biscuit from the Riverside shelter."
FENCE = "Last night Biscuit chewed through the garden fence and ran to the neighbours."
FILLER = (
    "The quarterly budget review moved to the second floor meeting room.",
    "Our team switched the build pipeline to a faster compiler this spring.",
    "The bakery on the corner sells sourdough loaves every Saturday morning.",
)
OTHERS_NOTE = "Biscuit won the agility ribbon at the county dog show."
QUESTION = "Where did Dana adopt the greyhound from?"
# The text lanes narrowed to the best memory and fact, so that only an entity lane can
# bring in the note about the fence (it shares no word of the question's but a name).
NARROW = {"windows": 1, "facts": 1, "keyword": 0, "graph": 0, "preferences": 0}


def _store(elephant: Elephant) -> None:
    """The notes, once per module's database."""
    with elephant.db.tenant(TENANT) as conn:
        row = conn.execute("SELECT count(*) FROM memories").fetchone()
    if row is not None and row[0] > 0:
        return
    for text in (ADOPTED, FENCE, *FILLER):
        commit_note(elephant, TENANT, NoteIn(text=text), wait=True)
    commit_note(elephant, OTHER, NoteIn(text=OTHERS_NOTE), wait=True)


def _with_hubs_above(elephant: Elephant, mentions: int) -> Elephant:
    """The same stack with another search.hub_mentions."""
    search_settings = elephant.settings.search.model_copy(update={"hub_mentions": mentions})
    settings = elephant.settings.model_copy(update={"search": search_settings})
    return Elephant(settings=settings, db=elephant.db, embedder=elephant.embedder, llm=None)


def _search(elephant: Elephant, lanes: dict[str, int], query: str = QUESTION) -> SearchResult:
    _store(elephant)
    return search(
        elephant,
        TENANT,
        SearchRequest(query=query, limit=20, lanes=lanes, explain=True),
        record_access=False,
    )


def _with(hits: list[SearchHit], needle: str) -> list[SearchHit]:
    return [hit for hit in hits if needle in hit.text]


def _fence_rows(elephant: Elephant) -> list[Any]:
    with elephant.db.tenant(TENANT) as conn:
        return conn.execute(
            "SELECT fe.entity_key FROM fact_entities AS fe JOIN facts AS f ON f.id = fe.fact_id"
            " WHERE f.text ILIKE '%%fence%%'"
        ).fetchall()


def test_expansion_brings_in_a_memory_that_shares_an_entity_with_a_hit(
    elephant: Elephant,
) -> None:
    without = _search(elephant, {**NARROW, "entity_expansion": 0})
    assert _with(without.hits, ADOPTED), "the question finds the adoption note"
    assert not _with(without.hits, "garden fence"), "no text lane brings the fence note"
    assert ("biscuit",) in _fence_rows(elephant), "the fence note's fact names Biscuit"

    found = _search(elephant, {**NARROW, "entity_expansion": 5})
    fence = _with(found.hits, "garden fence")
    assert fence, [hit.text for hit in found.hits]
    assert all(rank_in(hit.ranks, "entity_expansion") is not None for hit in fence)
    assert not any(rank_in(hit.ranks, "entity_expansion") for hit in _with(found.hits, ADOPTED))
    assert found.explain is not None
    assert found.explain.lanes["entity_expansion_memories"] == 5
    assert found.explain.lanes["entity_expansion_facts"] == 5


def test_expansion_does_not_follow_hub_entities(elephant: Elephant) -> None:
    assert _with(_search(elephant, {**NARROW, "entity_expansion": 5}).hits, "garden fence")
    # Biscuit is named by two notes and their facts: a hub above 1
    found = _search(_with_hubs_above(elephant, 1), {**NARROW, "entity_expansion": 5})
    assert not _with(found.hits, "garden fence"), [hit.text for hit in found.hits]


def test_entity_match_brings_in_what_names_the_question_entity(elephant: Elephant) -> None:
    query = "What happened with Biscuit?"
    lanes = {"windows": 0, "facts": 0, "keyword": 0, "graph": 0, "preferences": 0}
    found = _search(elephant, {**lanes, "entity_match": 5}, query)
    texts = [hit.text for hit in found.hits]
    assert _with(found.hits, "garden fence") and _with(found.hits, ADOPTED), texts
    assert all("Biscuit" in text for text in texts), texts
    assert all(rank_in(hit.ranks, "entity_match") is not None for hit in found.hits)
    assert found.explain is not None and found.explain.lanes["entity_match_memories"] == 5

    assert not _search(_with_hubs_above(elephant, 1), {**lanes, "entity_match": 5}, query).hits


def test_size_zero_turns_the_lanes_off(elephant: Elephant) -> None:
    found = _search(elephant, {**NARROW, "entity_expansion": 0, "entity_match": 0})
    assert found.explain is not None
    for param in (
        "entity_expansion_memories",
        "entity_expansion_facts",
        "entity_match_memories",
        "entity_match_facts",
    ):
        assert found.explain.lanes[param] == 0
    for hit in found.hits:
        assert rank_in(hit.ranks, "entity_expansion") is None
        assert rank_in(hit.ranks, "entity_match") is None


def test_another_tenants_rows_that_share_an_entity_never_come_in(elephant: Elephant) -> None:
    lanes = {**NARROW, "entity_expansion": 50, "entity_match": 50}
    for query in (QUESTION, "What did Biscuit win?"):
        found = _search(elephant, lanes, query)
        assert not _with(found.hits, "agility ribbon"), [hit.text for hit in found.hits]
    other = search(
        elephant,
        OTHER,
        SearchRequest(query="What did Biscuit win?", limit=20, lanes=lanes),
        record_access=False,
    )
    assert _with(other.hits, "agility ribbon")  # the other tenant finds its own
    assert not _with(other.hits, "garden fence") and not _with(other.hits, ADOPTED)
