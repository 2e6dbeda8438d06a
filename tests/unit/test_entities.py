"""The offline entity recogniser: what it links on must be a name, typed (issue 41).

The sentences are the ones the extractor got wrong before: a sentence's verb taken for
a name ("Allows"), code words taken for names ("DEFAULT", "DELETE"), and persons typed
as things.
"""

from __future__ import annotations

from datetime import datetime

from app.services.facts.model import TurnInput
from app.services.facts.offline.entities import capitalised_evidence, recognise
from app.services.facts.offline.extract import extract_offline
from app.services.graph.mentions import memory_mentions, question_entity_keys

PEOPLE = frozenset({"caroline", "melanie"})


def named(text: str, people: frozenset[str] = PEOPLE) -> list[tuple[str, str]]:
    return [(m.name, m.type) for m in recognise(text, people)]


def test_a_verb_opening_a_sentence_or_a_label_is_no_name() -> None:
    assert named("Allows Postgres to fill it.") == [("Postgres", "thing")]
    assert named("- **Cascade**: Allows deletes to follow the foreign key.") == []
    assert named("Allows faster reads. Makes sense, thanks Caroline!") == [("Caroline", "person")]


def test_code_and_shouted_words_are_no_names() -> None:
    assert named("Columns get a DEFAULT of now(). The DELETE statement removes rows.") == []
    assert named("Use ON DELETE CASCADE so the rows go.") == []
    assert named("I joined NASA after the LGBTQ meetup.") == [
        ("NASA", "organization"),
        ("LGBTQ", "thing"),
    ]


def test_persons_are_typed_as_persons() -> None:
    assert named("Alice painted a sunset. Gina said it was great!") == [
        ("Alice", "person"),
        ("Gina", "person"),
    ]
    assert named("My friend Sarah moved to Paris with James Brown.") == [
        ("Sarah", "person"),
        ("Paris", "place"),
        ("James Brown", "person"),
    ]
    # a nickname of a speaker is the speaker
    assert named("Hey Mel! Good to see you!") == [("Melanie", "person")]


def test_places_organisations_products_events_titles_and_dates() -> None:
    text = (
        'She studied at the University of Michigan, read "Charlotte\'s Web" on 7 May 2023, '
        "bought a new Kindle, went to the Grand Canyon and to the Pride Parade in Sweden."
    )
    assert named(text) == [
        ("University of Michigan", "organization"),
        ("Charlotte's Web", "work"),
        ("7 May 2023", "date"),
        ("Kindle", "product"),
        ("Grand Canyon", "place"),
        ("Pride Parade", "event"),
        ("Sweden", "place"),
    ]


def test_the_conversation_and_the_tenant_are_evidence() -> None:
    evidence = capitalised_evidence(["I met Zorbo at the gym."])
    assert "zorbo" in evidence
    # a sentence-initial name with nothing after it to show it is a subject
    assert named("Zorbo, the best. ") == []
    assert [(m.name, m.type) for m in recognise("Zorbo, the best.", evidence=evidence)] == [
        ("Zorbo", "thing")
    ]
    known = {"zorbo": "person"}
    assert [(m.name, m.type) for m in recognise("Zorbo, the best.", known=known)] == [
        ("Zorbo", "person")
    ]


def test_extracted_facts_carry_the_typed_entities() -> None:
    turns = [
        TurnInput("Melanie", "Alice painted a sunset. Gina said it was great!"),
        TurnInput("Bob", "I set DEFAULT values in Postgres yesterday."),
    ]
    facts = extract_offline(turns, datetime(2023, 5, 8))
    entities = {(e.name, e.type) for f in facts for e in f.entities}
    assert ("Alice", "person") in entities
    assert ("Gina", "person") in entities
    assert not {name for name, _ in entities} & {"DEFAULT", "Allows"}


def test_a_memory_counts_its_mentions_and_reads_relative_dates() -> None:
    turns = [
        ("Caroline", "I went to Sweden yesterday with Sarah.", datetime(2023, 5, 8)),
        ("Melanie", "Sweden! Was Sarah happy there?", datetime(2023, 5, 8)),
    ]
    found = {m.key: (m.type, count) for m, count in memory_mentions(turns, PEOPLE, {})}
    assert found == {
        "sweden": ("place", 2),
        "7 may 2023": ("date", 1),
        "sarah": ("person", 2),
    }


def test_a_question_names_its_entities_by_the_same_rules() -> None:
    assert question_entity_keys("When did Caroline go to Sweden with Gina?") == [
        "caroline",
        "sweden",
        "gina",
    ]
    assert question_entity_keys("What does DEFAULT do?") == []
