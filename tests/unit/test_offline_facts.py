"""The offline extractor: speaker-attributed, date-resolved facts without an LLM."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.services.facts.dates import parse_session_date
from app.services.facts.model import ExtractedFact, TurnInput
from app.services.facts.offline.extract import extract_offline
from app.services.facts.offline.lexicon import content_words
from app.services.facts.offline.rewrite import MAX_FACT_CHARS

SESSION = parse_session_date("1:56 pm on 8 May, 2023")
LOCOMO = Path("/work/shared/datasets/locomo10.json")


def texts(facts: list[ExtractedFact]) -> list[str]:
    return [f.text for f in facts]


def by_text(facts: list[ExtractedFact]) -> dict[str, ExtractedFact]:
    return {f.text: f for f in facts}


def conversation() -> list[TurnInput]:
    return [
        TurnInput("Alice", "Hi Bob! How are you?", turn_id="D1:1"),
        TurnInput(
            "Bob", "Hey Alice! I started a new job at Airbus last week. Thanks!", turn_id="D1:2"
        ),
        TurnInput(
            "Alice",
            "Wow, congrats! My sister moved to Lisbon two months ago and I visited her yesterday.",
            turn_id="D1:3",
        ),
        TurnInput("Carol", "That sounds lovely! I'm allergic to cats, lol", turn_id="D1:4"),
        TurnInput("Bob", "We're planning a hiking trip to Norway next month.", turn_id="D1:5"),
        TurnInput("Carol", "Haha nice. I'll bring my camera!", turn_id="D1:6"),
        TurnInput("Alice", "Thanks! Talk soon!", turn_id="D1:7"),
        TurnInput("Carol", "My daughter Emma turned 5 on Friday.", turn_id="D1:8"),
    ]


def test_the_locomo_example_sentence() -> None:
    turn = TurnInput(
        "Caroline",
        "I went to a LGBTQ support group yesterday and it was so powerful.",
        turn_id="D1:3",
    )
    [fact] = extract_offline([turn], SESSION)
    assert fact.text == "Caroline went to a LGBTQ support group on 7 May 2023"
    assert fact.subject == "Caroline"
    assert fact.fact_type == "experience"
    assert fact.valid_from == datetime(2023, 5, 7, tzinfo=UTC)
    assert fact.source_turn_ids == ["D1:3"]
    assert ("Caroline", "person") in [(e.name, e.type) for e in fact.entities]
    assert "LGBTQ" in [e.name for e in fact.entities]
    assert 0.6 <= fact.confidence <= 0.8


def test_a_dated_conversation_gives_attributed_resolved_facts() -> None:
    facts = by_text(extract_offline(conversation(), SESSION))
    assert set(facts) == {
        "Bob started a new job at Airbus during the week of 1 May 2023",
        "Alice's sister moved to Lisbon in March 2023",
        "Alice visited her on 7 May 2023",
        "Carol is allergic to cats",
        "Bob and others are planning a hiking trip to Norway in June 2023",
        "Carol will bring Carol's camera",
        "Carol's daughter Emma turned 5 on 5 May 2023",
    }
    job = facts["Bob started a new job at Airbus during the week of 1 May 2023"]
    assert job.source_turn_ids == ["D1:2"]
    assert job.subject == "Bob"
    assert job.valid_from == datetime(2023, 5, 1, tzinfo=UTC)
    assert [(e.name, e.type) for e in job.entities] == [
        ("Bob", "person"),
        ("Airbus", "organization"),
    ]
    lisbon = facts["Alice's sister moved to Lisbon in March 2023"]
    assert lisbon.source_turn_ids == ["D1:3"]
    assert ("Lisbon", "place") in [(e.name, e.type) for e in lisbon.entities]
    assert lisbon.valid_from == datetime(2023, 3, 1, tzinfo=UTC)
    allergy = facts["Carol is allergic to cats"]
    assert allergy.source_turn_ids == ["D1:4"]
    assert allergy.valid_from == SESSION  # no date in the sentence: the session time
    trip = facts["Bob and others are planning a hiking trip to Norway in June 2023"]
    assert ("Norway", "place") in [(e.name, e.type) for e in trip.entities]
    emma = facts["Carol's daughter Emma turned 5 on 5 May 2023"]
    assert ("Emma", "person") in [(e.name, e.type) for e in emma.entities]
    assert all(f.fact_type == "experience" for f in facts.values())


def test_same_input_same_output() -> None:
    first = extract_offline(conversation(), SESSION)
    second = extract_offline(conversation(), SESSION)
    assert [f.model_dump() for f in first] == [f.model_dump() for f in second]


@pytest.mark.parametrize(
    "text",
    [
        "Hi!",
        "How are you?",
        "Thanks!",
        "lol",
        "That's great!",
        "Good to see you!",
        "ok",
        "haha yes",
        "Wow, that sounds amazing!",
        "Take care!",
        "You look great!",
        "Hey Mel!",
        "Congrats on the new job!",
        "Bye, see you soon! 😀",
        "Totally agree, Mel.",
        "Have you seen my new dog Max?",
    ],
)
def test_chit_chat_yields_no_facts(text: str) -> None:
    assert extract_offline([TurnInput("Ann", text), TurnInput("Mel", "ok")], SESSION) == []


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("I'm a nurse at the city hospital.", "Ann is a nurse at the city hospital"),
        ("I am training for a marathon.", "Ann is training for a marathon"),
        (
            "I've been learning Spanish for two years.",
            "Ann has been learning Spanish for two years",
        ),
        ("I'd love to visit Japan someday.", "Ann would love to visit Japan someday"),
        ("I'll start my new role in Berlin.", "Ann will start Ann's new role in Berlin"),
        ("I love painting landscapes.", "Ann loves painting landscapes"),
        ("My brother gave me his old guitar.", "Ann's brother gave Ann his old guitar"),
        ("I really enjoy hiking by myself.", "Ann really enjoys hiking alone"),
        ("I myself built the shed.", "Ann built the shed"),
        ("The group helped me accept myself.", "The group helped Ann accept Ann"),
        (
            "Gonna continue my studies in psychology!",
            "Ann is going to continue Ann's studies in psychology",
        ),
        (
            "Researching adoption agencies these days.",
            "Ann is researching adoption agencies these days",
        ),
        ("I think you should try the ramen place.", "Ann thinks Mel should try the ramen place"),
    ],
)
def test_first_and_second_person_are_resolved(text: str, fact: str) -> None:
    facts = extract_offline([TurnInput("Mel", "ok"), TurnInput("Ann", text)], SESSION)
    assert texts(facts) == [fact]
    assert facts[0].subject == "Ann"
    assert facts[0].fact_type == "experience"


def test_third_person_statements_keep_their_subject_or_name_the_speaker() -> None:
    turns = [
        TurnInput("Ann", "Alice lives in Paris and works at Airbus."),
        TurnInput("Ann", "The transgender stories were so inspiring!"),
    ]
    facts = extract_offline(turns, SESSION)
    assert texts(facts) == [
        "Alice lives in Paris and works at Airbus",
        "Ann said the transgender stories were so inspiring",
    ]
    assert [f.subject for f in facts] == ["Alice", "Ann"]
    assert [f.fact_type for f in facts] == ["world", "world"]
    assert [(e.name, e.type) for e in facts[0].entities] == [
        ("Ann", "person"),
        ("Alice", "person"),
        ("Paris", "place"),
        ("Airbus", "organization"),
    ]


def test_a_note_keeps_its_sentences_with_dates_resolved() -> None:
    note = TurnInput(
        None,
        "We decided to use Postgres 18 for the memory service. The launch is planned for "
        "next month. Anything else?",
        timestamp=SESSION,
    )
    facts = extract_offline([note], None)
    assert texts(facts) == [
        "We decided to use Postgres 18 for the memory service",
        "The launch is planned for June 2023",
    ]
    assert all(f.fact_type == "world" and f.source_turn_ids == [] for f in facts)
    assert facts[0].valid_from == SESSION
    assert facts[1].valid_from == datetime(2023, 6, 1, tzinfo=UTC)
    assert [e.name for e in facts[0].entities] == ["Postgres"]


def test_the_turn_timestamp_wins_over_the_session_date() -> None:
    turn = TurnInput("Ann", "I adopted a cat yesterday.", timestamp=datetime(2024, 1, 10))
    [fact] = extract_offline([turn], SESSION)
    assert fact.text == "Ann adopted a cat on 9 January 2024"
    assert fact.valid_from == datetime(2024, 1, 9, tzinfo=UTC)  # naive times are UTC


def test_a_birthday_is_not_pinned_to_one_year() -> None:
    [fact] = extract_offline([TurnInput("Ann", "My daughter's birthday is on 14 March.")], SESSION)
    assert fact.text == "Ann's daughter's birthday is on 14 March"
    assert fact.valid_from == SESSION


def test_repeated_facts_are_merged_with_all_their_turns() -> None:
    turns = [
        TurnInput("Ann", "I live in Oslo.", turn_id="t1"),
        TurnInput("Ann", "I live in Oslo!", turn_id="t2"),
    ]
    [fact] = extract_offline(turns, SESSION)
    assert fact.text == "Ann lives in Oslo"
    assert fact.source_turn_ids == ["t1", "t2"]


def test_facts_are_concise_and_confidence_drops_with_length() -> None:
    long_text = "I went to the market " + "and bought apples, pears, plums " * 20 + "yesterday."
    short = TurnInput("Ann", "I bought a red bike.")
    facts = extract_offline([TurnInput("Ann", long_text), short], SESSION)
    assert len(facts) == 2
    assert all(len(f.text) <= MAX_FACT_CHARS for f in facts)
    assert facts[0].confidence == 0.6
    assert facts[1].confidence == 0.8


def test_no_turns_no_facts() -> None:
    assert extract_offline([], SESSION) == []
    assert extract_offline([TurnInput("Ann", "")], None) == []


def test_content_words_skip_function_words_and_chit_chat() -> None:
    assert content_words("Wow, thanks! I moved to Berlin's center in 2019") == [
        "moved",
        "berlin",
        "center",
        "2019",
    ]


def _locomo_sessions(conversation_index: int) -> list[tuple[datetime | None, list[TurnInput]]]:
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    conv = data[conversation_index]["conversation"]
    sessions = []
    index = 1
    while f"session_{index}" in conv:
        date = parse_session_date(conv[f"session_{index}_date_time"])
        turns = [
            TurnInput(t["speaker"], t["text"], turn_id=t["dia_id"])
            for t in conv[f"session_{index}"]
        ]
        sessions.append((date, turns))
        index += 1
    return sessions


@pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo data set not present")
def test_locomo_conversation_zero() -> None:
    sessions = _locomo_sessions(0)
    date, turns = sessions[0]
    assert date == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    facts = extract_offline(turns, date)
    assert len(facts) * 3 >= len(turns)
    assert "Caroline went to a LGBTQ support group on 7 May 2023" in texts(facts)
    turn_ids = {t.turn_id for t in turns}
    speakers = {t.speaker for t in turns}
    for fact in facts:
        assert set(fact.source_turn_ids) <= turn_ids
        assert fact.subject in speakers or fact.fact_type == "world"
        assert 0 < len(fact.text) <= MAX_FACT_CHARS
    total_turns = total_facts = 0
    for date, turns in sessions:
        facts = extract_offline(turns, date)
        total_turns += len(turns)
        total_facts += len(facts)
        assert all(f.valid_from is not None and f.valid_from.tzinfo for f in facts)
    assert total_facts * 3 >= total_turns


# A Monday, so "last Tues" and "next Thurs" are unambiguous.
MONDAY = datetime(2024, 2, 5, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "fact", "day"),
    [
        (
            "Last week I adopted a dog called Rex.",
            "Tom adopted a dog called Rex during the week of 29 January 2024",
            datetime(2024, 1, 29, tzinfo=UTC),
        ),
        (
            "Last week, my sister visited Rome.",
            "Tom's sister visited Rome during the week of 29 January 2024",
            datetime(2024, 1, 29, tzinfo=UTC),
        ),
        (
            "Yesterday I went to a fair to show my studio, it was great.",
            "Tom went to a fair to show Tom's studio on 4 February 2024, it was great",
            datetime(2024, 2, 4, tzinfo=UTC),
        ),
        (
            "During the summer I worked at a farm.",
            "During the summer Tom worked at a farm",
            MONDAY,
        ),
        (
            "Today is my birthday.",
            "5 February 2024 is Tom's birthday",
            datetime(2024, 2, 5, tzinfo=UTC),
        ),
        (
            "Writing isn't always easy for me.",
            "Writing isn't always easy for Tom",
            MONDAY,
        ),
    ],
)
def test_sentences_opening_with_a_date_or_a_preposition_stay_grammatical(
    text: str, fact: str, day: datetime
) -> None:
    [found] = extract_offline([TurnInput("Tom", text)], MONDAY)
    assert found.text == fact
    assert found.subject == "Tom"
    assert found.valid_from == day


@pytest.mark.parametrize(
    ("text", "fact", "day"),
    [
        ("Last Tues I went hiking.", "Tom went hiking on 30 January 2024", 30),
        ("Next Thurs I am flying to Rome.", "Tom is flying to Rome on 8 February 2024", 8),
        ("On Weds I met Sarah.", "Tom met Sarah on 31 January 2024", 31),
        ("I called Dad last Fri.", "Tom called Dad on 2 February 2024", 2),
    ],
)
def test_abbreviated_weekdays_are_resolved(text: str, fact: str, day: int) -> None:
    [found] = extract_offline([TurnInput("Tom", text)], MONDAY)
    assert found.text == fact
    assert found.valid_from is not None and found.valid_from.day == day


def test_a_turn_without_an_id_cites_none() -> None:
    turns = [TurnInput("Tom", "I adopted a dog called Rex."), TurnInput("Ann", "I live in Oslo.")]
    facts = extract_offline(turns, MONDAY)
    assert texts(facts) == ["Tom adopted a dog called Rex", "Ann lives in Oslo"]
    assert [f.source_turn_ids for f in facts] == [[], []]


@pytest.mark.parametrize(
    ("text", "fact", "subject"),
    [
        ("I live in Paris.", "Ana lives in Paris", "Ana"),
        ("I moved to Berlin.", "Ana moved to Berlin", "Ana"),
        ("My sister works at Airbus.", "Ana's sister works at Airbus", "Ana"),
        ("Moved to Lisbon last month.", "Ana moved to Lisbon in January 2024", "Ana"),
        ("Yesterday I went to the dentist.", "Ana went to the dentist on 4 February 2024", "Ana"),
        # not about the author: kept as written, never "Ana said ..."
        ("Alice moved to Berlin in June 2024.", "Alice moved to Berlin in June 2024", "Alice"),
        ("The launch is planned for next month.", "The launch is planned for March 2024", None),
    ],
)
def test_a_notes_first_person_is_its_author(text: str, fact: str, subject: str | None) -> None:
    note = TurnInput(None, text, timestamp=MONDAY, author="Ana")
    [found] = extract_offline([note], None)
    assert found.text == fact
    assert found.subject == subject
    assert ("Ana" in [e.name for e in found.entities]) == (subject == "Ana")
    assert found.source_turn_ids == []


def test_a_note_without_an_author_keeps_its_first_person() -> None:
    [found] = extract_offline([TurnInput(None, "I live in Paris.", timestamp=MONDAY)], None)
    assert (found.text, found.subject) == ("I live in Paris", None)
