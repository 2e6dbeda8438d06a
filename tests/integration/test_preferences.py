"""Standing preferences and instructions: kept as their own kind and shown for their topic."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from app.config import Settings
from app.services.facts.model import TurnInput
from app.services.facts.standing import standing_facts, standing_kind
from app.services.memory.commit import commit_conversation, commit_note
from app.services.memory.schemas import ConversationIn, NoteIn
from app.services.retrieval.lanes import LaneSizes
from app.services.retrieval.schemas import SearchHit, SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant
from tests.conftest import make_settings

T = "diner"


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("Always reply in British English.", "instruction"),
        ("Please never schedule meetings before 10am.", "instruction"),
        ("Don't use emojis in replies.", "instruction"),
        ("I prefer aisle seats on long flights.", "preference"),
        ("I'm vegetarian, so no meat please.", "preference"),
        ("I'm allergic to peanuts.", "preference"),
        ("My favourite tea is genmaicha.", "preference"),
        ("I went hiking yesterday.", None),
        ("Never mind, that was it.", None),
        ("Do you always do that?", None),
        ("Always!", None),
        ("Never say never!", None),
        ("Always good to hear!", None),
        ("Never been to an animal shelter before, but it must be great!", None),
        ("I played my favorite CS:GO game in a tournament.", None),
        ("From now on, call me Sam.", "instruction"),
    ],
)
def test_standing_sentences_are_told_from_ordinary_ones(sentence: str, kind: str | None) -> None:
    assert standing_kind(sentence) == kind


def test_an_assistant_never_states_a_persons_preference() -> None:
    turns = [
        TurnInput("Assistant", "I always recommend booking early. I prefer trains.", turn_id="a1"),
        TurnInput("Maya", "Thanks! I'm vegetarian, by the way.", turn_id="m1"),
        TurnInput(None, "Never send invoices on Fridays.", author="Maya"),
    ]
    facts = standing_facts(turns, {"assistant"})
    assert [(f.text, f.subject, f.fact_type, f.source_turn_ids) for f in facts] == [
        (
            "Maya's standing preference on food, meals and restaurants: I'm vegetarian, by the way.",
            "Maya",
            "preference",
            ["m1"],
        ),
        (
            "Maya's standing instruction on money, invoices and payments: "
            "Never send invoices on Fridays.",
            "Maya",
            "preference",
            [],
        ),
    ]


@pytest.fixture(scope="module")
def settings(pg_data_dir: Path, new_database: Callable[..., str]) -> Settings:
    return make_settings(pg_data_dir, embedded={"database": new_database("preferences")})


FOOD_TALK = [
    ("Maya", "We tried the new ramen place on Fifth Street, the broth was great."),
    ("Assistant", "Nice! Did you try their gyoza as well?"),
    ("Maya", "Yes, and the dumplings at Golden Lotus last week were even better."),
    ("Assistant", "Golden Lotus is popular for its dim sum brunch on weekends."),
    ("Maya", "Tom wants to try the steakhouse downtown for his birthday dinner."),
    ("Assistant", "The steakhouse has a tasting menu and a good wine list."),
    ("Maya", "Last month we had tacos at the market, the salsa was amazing."),
    ("Assistant", "The market also has a Sunday food festival in summer."),
]


@pytest.fixture(scope="module")
def diner(elephant: Elephant) -> Elephant:
    early = ConversationIn.model_validate(
        {
            "turns": [
                {
                    "speaker": "Maya",
                    "text": "Quick note for the future: I'm vegetarian.",
                    "id": "s1:1",
                },
                {"speaker": "Assistant", "text": "Got it, thanks for telling me.", "id": "s1:2"},
                {
                    "speaker": "Maya",
                    "text": "My bike chain keeps slipping, any tips?",
                    "id": "s1:3",
                },
            ],
            "force": True,
        }
    )
    commit_conversation(elephant, T, early, wait=True)
    for session in range(3):
        turns = [
            {"speaker": who, "text": f"{text} (week {session})", "id": f"s{session + 2}:{n}"}
            for n, (who, text) in enumerate(FOOD_TALK)
        ]
        later = ConversationIn.model_validate({"turns": turns, "force": True})
        commit_conversation(elephant, T, later, wait=True)
    return elephant


def hits_for(elephant: Elephant, query: str, **lanes: int) -> list[SearchHit]:
    request = SearchRequest(query=query, limit=5, lanes=LaneSizes(**lanes))
    return search(elephant, T, request, record_access=False).hits


def test_the_preference_is_a_fact_of_its_own_kind(diner: Elephant) -> None:
    with diner.db.tenant(T) as conn:
        rows = conn.execute(
            "SELECT text, subject, source_turn_ids FROM facts WHERE fact_type = 'preference'"
        ).fetchall()
    assert rows == [
        (
            "Maya's standing preference on food, meals and restaurants: "
            "Quick note for the future: I'm vegetarian.",
            "Maya",
            ["s1:1"],
        )
    ]


def test_a_standing_preference_reaches_a_later_request_on_its_topic(diner: Elephant) -> None:
    query = "Can you recommend a good restaurant for dinner on Friday?"
    shown = hits_for(diner, query)
    # the preference fact, or the window holding its turn, which it lifts (fact_support)
    assert [hit for hit in shown if "I'm vegetarian" in hit.text], [hit.text for hit in shown]
    request = SearchRequest(query=query, limit=20, diversify=False)
    ranked = search(diner, T, request, record_access=False).hits
    preference = next(hit for hit in ranked if hit.kind == "fact" and "vegetarian" in hit.text)
    assert preference.ranks.preferences == 1


def test_an_off_topic_request_does_not_get_the_preference(diner: Elephant) -> None:
    shown = hits_for(diner, "How do I replace a slipping bike chain?")
    assert all(hit.ranks.preferences is None for hit in shown)


def test_a_note_can_hold_an_instruction(elephant: Elephant) -> None:
    commit_note(
        elephant,
        "notes-pref",
        NoteIn(text="Always write invoices in euros.", subject="Maya"),
        wait=True,
    )
    with elephant.db.tenant("notes-pref") as conn:
        rows = conn.execute("SELECT text FROM facts WHERE fact_type = 'preference'").fetchall()
    assert rows == [
        (
            "Maya's standing instruction on writing, replies and emails: Always write invoices in euros.",
        )
    ]
