"""Question decomposition by rules: a conjunction of names becomes one question per name."""

from __future__ import annotations

import pytest

from app.services.retrieval.decomposition import MAX_ITEMS, sub_queries


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "What subject have Caroline and Melanie both painted?",
            ["What subject has Caroline painted?", "What subject has Melanie painted?"],
        ),
        (
            "Which city have both Jean and John visited?",
            ["Which city has Jean visited?", "Which city has John visited?"],
        ),
        (
            "How do Jon and Gina like to destress?",
            ["How does Jon like to destress?", "How does Gina like to destress?"],
        ),
        (
            # the plural verb is not the conjunction's: left as it is
            "What did Tim do in Paris, Rome or Oslo?",
            ["What did Tim do in Paris?", "What did Tim do in Rome?", "What did Tim do in Oslo?"],
        ),
        (
            "What is Caroline's and Melanie's favourite food?",
            ["What is Caroline's favourite food?", "What is Melanie's favourite food?"],
        ),
        (
            "When did Maya and Sam Lee move to New York?",
            ["When did Maya move to New York?", "When did Sam Lee move to New York?"],
        ),
    ],
)
def test_a_conjunction_of_names_is_split(question: str, expected: list[str]) -> None:
    assert sub_queries(question) == expected


@pytest.mark.parametrize(
    "question",
    [
        "What did Maya say about the trip?",  # one name
        "What do cats and dogs eat?",  # lower-case words bind each other
        "Did Jon and I go to the fair?",  # "I" is not a name to search alone
        "What and Where are these?",  # question words, not names
        "",
    ],
)
def test_other_questions_are_left_whole(question: str) -> None:
    assert sub_queries(question) == []


def test_at_most_a_few_sub_queries() -> None:
    names = ", ".join(["Ann", "Bob", "Cid", "Dee", "Eve"])
    found = sub_queries(f"Where did {names} and Fay meet?")
    assert len(found) == MAX_ITEMS
    assert found[0] == "Where did Ann meet?"
