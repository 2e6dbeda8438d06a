"""Rule-based contradiction between an older and a newer fact about one subject."""

from __future__ import annotations

import pytest

from app.services.facts.contradiction_rules import Verdict, offline_contradiction


@pytest.mark.parametrize(
    ("subject", "older", "newer"),
    [
        ("Alice", "Alice lives in Paris", "Alice moved to Berlin"),
        ("Alice", "Alice lives in Paris", "Alice relocated to Berlin last year"),
        ("Bob", "Bob works at Google", "Bob joined Microsoft in 2023"),
        ("Bob", "Bob works for Google", "Bob got a job at Microsoft"),
        ("Bob", "Bob likes sushi", "Bob doesn't like sushi"),
        ("Bob", "Bob likes sushi", "Bob does not like sushi"),
        ("Bob", "Bob loves sushi", "Bob hates sushi"),
        ("Carol", "Carol is 31 years old", "Carol is 32 years old"),
        ("Eve", "Eve has 2 kids", "Eve has three kids"),
        ("Eve", "Eve is married to Tom", "Eve is dating Sam"),
        ("Eve", "Eve's husband is Tom", "Eve is married to Sam"),
        ("Eve", "Eve is married to Tom", "Eve is single"),
        ("Eve", "Eve's favourite colour is blue", "Eve's favorite colour is green"),
        ("Frank", "Frank is allergic to peanuts", "Frank is not allergic to peanuts"),
        ("Frank", "Frank is from Sweden", "Frank is from Norway"),
        ("Alice", "Alice no longer lives in Paris", "Alice lives in Paris"),
        ("Alice", "She lives in Paris", "She moved to Berlin"),
        (None, "Alice lives in Paris", "Alice moved to Berlin"),
        (None, "Gina plays the violin", "Gina does not play the violin"),
    ],
)
def test_contradictions(subject: str | None, older: str, newer: str) -> None:
    verdict = offline_contradiction(subject, older, newer)
    assert verdict.contradicts, verdict
    assert 0.7 <= verdict.score <= 1.0
    assert verdict.reason


@pytest.mark.parametrize(
    ("subject", "older", "newer"),
    [
        ("Alice", "Alice lives in Paris", "Alice lives in Paris"),
        ("Alice", "Alice lives in Paris", "Alice lives in Paris with her cat"),
        ("Alice", "Alice lives in New York", "Alice lives in New York City"),
        ("Dan", "Dan likes hiking", "Dan likes cooking"),
        ("Dan", "Dan likes hiking", "Dan enjoys hiking a lot"),
        ("Bob", "Bob works at Google", "Bob works at Google as an engineer"),
        ("Bob", "Bob plays guitar", "Bob bought a car"),
        ("Eve", "Eve's favourite colour is blue", "Eve's favourite food is pizza"),
        ("Frank", "Frank moved from Sweden to Paris", "Frank lives in Paris"),
        ("Bob", "Bob worked at Google", "Bob works at Microsoft"),
        ("Alice", "Alice lives in Paris", "Bob lives in Berlin"),
        (None, "Alice lives in Paris", "Bob lives in Berlin"),
        ("Alice", "Alice lives in Paris", "Alice's sister lives in Berlin"),
        (None, "Bob likes sushi", "Carol doesn't like sushi"),
    ],
)
def test_compatible_statements(subject: str | None, older: str, newer: str) -> None:
    verdict = offline_contradiction(subject, older, newer)
    assert not verdict.contradicts, verdict
    assert 0.0 <= verdict.score < 0.5


def test_reasons_name_the_conflict() -> None:
    assert offline_contradiction("Alice", "Alice lives in Paris", "Alice moved to Berlin") == (
        Verdict(True, 0.85, "different residence: 'Paris' vs 'Berlin'")
    )
    same = offline_contradiction("Alice", "Alice lives in Paris.", "alice lives in paris")
    assert same == Verdict(False, 0.0, "same statement")
    other = offline_contradiction("Alice", "Alice lives in Paris", "Bob lives in Berlin")
    assert "different subjects" in other.reason


def test_a_numeric_change_is_scored_higher_than_a_fuzzy_one() -> None:
    age = offline_contradiction("Carol", "Carol is 31 years old", "Carol turned 32")
    assert age.contradicts and age.score == 0.9
