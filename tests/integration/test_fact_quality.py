"""Fact quality (issue 14): no formatting as facts, one fact per claim, whole sentences,
and an assistant's statements kept apart as lower-trust facts.

The offline extractor on hand-written turns, the labelled sample of
benchmarks/fact_quality.py, and the write path on the real database and embedder.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from litestar.testing import TestClient

from app.config import FactsSettings, Settings, load_settings
from app.prompts import extract_facts
from app.services.facts.model import ExtractedFact, TurnInput
from app.services.facts.offline.extract import extract_offline
from app.services.facts.offline.rewrite import ASSISTANT_CONFIDENCE
from app.services.memory.commit import commit_conversation
from app.services.memory.schemas import ConversationIn
from app.services.runtime import Elephant
from benchmarks import fact_quality
from tests.conftest import api_client
from tests.fakes import ScriptedLLM

SESSION = datetime(2024, 4, 2, 9, 0, tzinfo=UTC)

Client = TestClient  # type: ignore[type-arg]


def texts(facts: list[ExtractedFact]) -> list[str]:
    return [f.text for f in facts]


def chat(speaker: str, text: str, **options: Any) -> list[ExtractedFact]:
    """The facts of one turn, in a conversation with someone else."""
    turns = [TurnInput("Priya", "ok", turn_id="t0"), TurnInput(speaker, text, turn_id="t1")]
    return [f for f in extract_offline(turns, SESSION, **options) if f.source_turn_ids == ["t1"]]


FORMATTING = [
    "## Packing list for Kyoto",
    "# Home renovation\n\n### Kitchen",
    "**Budget tips:**",
    "**Vegetarian-friendly spots**",
    "Here are some options for your trip to Osaka:",
    "- Light layers and a rain jacket\n- Comfortable walking shoes\n- A Suica card",
    "1. Fushimi Inari early in the morning\n2. Arashiyama bamboo grove\n3. A day trip to Nara",
    "- **Must-see:** teamLab Planets, Senso-ji, Shibuya Crossing",
    "Reading list:\n1. The Overstory\n2. Klara and the Sun",
    "```python\nimport requests\nresp = requests.post(URL, json=payload, timeout=10)\n```",
    "resp.raise_for_status()",
    "`pip install requests==2.31` and `export TIMEOUT=10`",
    "| City | Hotel | Price |\n|---|---|---|\n| Kyoto | Hoshinoya | $800 |",
    "https://www.westjr.co.jp/global/en/",
    "---",
    "- Buy the ticket at the JR office\n- Use the ICOCA & HARUKA pass",
]


@pytest.mark.parametrize("text", FORMATTING)
@pytest.mark.parametrize("speaker", ["Maya", "Assistant", None])
def test_formatting_is_never_a_fact(text: str, speaker: str | None) -> None:
    if speaker is None:  # a note
        facts = extract_offline([TurnInput(None, text, SESSION, author="Sam")], None)
    else:
        facts = chat(speaker, text)
    assert facts == []


def test_emphasis_is_stripped_from_kept_text() -> None:
    [fact] = chat("Maya", "**I moved to Lisbon** in _2019_ with my cat `Mochi`.")
    assert fact.text == "Maya moved to Lisbon in 2019 with Maya's cat Mochi"


def test_a_list_item_that_is_a_full_clause_is_kept() -> None:
    note = TurnInput(None, "## Kitchen\n- The electrician comes on 19 January 2024.", SESSION)
    assert texts(extract_offline([note], None)) == ["The electrician comes on 19 January 2024"]


ANSWER = """## Where to stay in Kyoto

Here are some options for late May:

### Budget
- Business hotels near Kyoto Station
- **Tip:** book early, spring is busy

### Splurge
I recommend the Kyoto ryokan Hoshinoya, about $800 a night.

| Hotel | Price |
|---|---|
| Hoshinoya | $800 |

Let me know if you'd like more options!"""


def test_an_assistant_recommendation_is_a_marked_low_trust_fact() -> None:
    facts = chat("Assistant", ANSWER)
    [fact] = facts
    assert "Hoshinoya" in fact.text and "$800 a night" in fact.text
    assert fact.text.startswith("Assistant recommends")
    assert fact.said_by_assistant is True
    assert fact.confidence <= ASSISTANT_CONFIDENCE == 0.5
    assert fact.source_turn_ids == ["t1"]


def test_the_users_facts_are_not_marked() -> None:
    turns = [
        TurnInput("Priya", "I'm planning a trip to Japan with my husband Arjun.", turn_id="u"),
        TurnInput("assistant", ANSWER, turn_id="a"),
    ]
    facts = extract_offline(turns, SESSION)
    assert [(f.source_turn_ids, f.said_by_assistant) for f in facts] == [
        (["u"], False),
        (["a"], True),
    ]
    assert facts[0].confidence == 0.8


@pytest.mark.parametrize("speaker", ["assistant", "ChatGPT", "AI", "Claude", " BOT "])
def test_assistant_speakers_are_matched_in_any_case(speaker: str) -> None:
    [fact] = chat(speaker, "The JR Pass costs about $340 per person for 7 days.")
    assert fact.said_by_assistant and fact.confidence <= 0.5
    assert fact.text.endswith("said the JR Pass costs about $340 per person for 7 days")


def test_the_assistant_speakers_are_configurable() -> None:
    line = "The JR Pass costs about $340 per person for 7 days."
    [helper] = chat("Helper", line, assistant_speakers=("helper",))
    [assistant] = chat("Assistant", line, assistant_speakers=("helper",))
    assert helper.said_by_assistant and not assistant.said_by_assistant
    settings = load_settings({"ELEPHANT_FACTS_ASSISTANT_SPEAKERS": "Helper, Concierge"})
    assert settings.facts.assistant_speakers == ("helper", "concierge")
    assert Settings().facts == FactsSettings()
    assert "assistant" in FactsSettings().assistant_speakers


def test_generic_assistant_advice_gives_no_fact() -> None:
    advice = (
        "Stay hydrated and wear comfortable shoes. A hung connection blocks the worker. "
        "Timeouts like this usually come from a missing timeout. Hope this helps!"
    )
    assert chat("Assistant", advice) == []


def test_without_from_assistant_assistant_turns_give_nothing() -> None:
    turns = [
        TurnInput("Priya", "I booked Hoshinoya for two nights.", turn_id="u"),
        TurnInput("Assistant", ANSWER, turn_id="a"),
        TurnInput("Priya", "Arjun is vegetarian.", turn_id="u2"),
    ]
    facts = extract_offline(turns, SESSION, from_assistant=False)
    assert texts(facts) == ["Priya booked Hoshinoya for two nights", "Arjun is vegetarian"]
    assert not any(f.said_by_assistant for f in facts)


@pytest.mark.parametrize(
    "text",
    [
        "I moved to Berlin in 2019. In 2019 I moved to Berlin!",
        "I recommend the Kyoto ryokan Hoshinoya, about $800 a night.\n"
        "I'd recommend the ryokan Hoshinoya in Kyoto, about $800 a night!",
    ],
)
def test_near_identical_sentences_in_one_turn_give_one_fact(text: str) -> None:
    assert len(chat("Assistant", text)) == 1
    assert len(chat("Maya", text)) == 1


def test_the_more_specific_of_two_near_identical_facts_stays() -> None:
    text = (
        "I recommend the ryokan Hoshinoya, about $800 a night.\n"
        "I recommend the ryokan Hoshinoya in Kyoto, about $800 a night."
    )
    [fact] = chat("Assistant", text)
    assert "in Kyoto" in fact.text


def test_facts_that_differ_in_a_number_are_both_kept() -> None:
    text = (
        "I booked the Hoshinoya ryokan in Kyoto for two nights with Arjun for our "
        "anniversary trip in room 12. I booked the Hoshinoya ryokan in Kyoto for two nights "
        "with Arjun for our anniversary trip in room 14."
    )
    assert len(chat("Priya", text)) == 2


@pytest.mark.parametrize(
    "text",
    [
        "Oh and I need to tell you about...",
        "I gotta tell Gina about",
        "I really like Nate with",
        "Just like you with your recent tournament.",
        "I booked a table for the",
        "Street food in Dotonbori.",
        "Just under two hours, 1:58.",
        "Buy the ticket at the JR ticket office.",
    ],
)
def test_a_fragment_is_not_a_fact(text: str) -> None:
    assert chat("Maya", text) == []


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        # a stranded preposition after a verb or an adjective is a whole sentence
        (
            "I finally wrote the essay I was so nervous about.",
            "Maya finally wrote the essay Maya was so nervous about",
        ),
        ("I grew up in a small town by the sea.", "Maya grew up in a small town by the sea"),
        # a coordinated subject keeps its partner and its plural verb
        (
            "Gina and I are getting married in October!",
            "Gina and Maya are getting married in October 2024",
        ),
        (
            "My wife and I plan a trip to Norway.",
            "Maya's wife and Maya plan a trip to Norway",
        ),
        # "every Thursday" is a habit, "the Sunday market" a market: no one date
        (
            "Every Thursday I take my dog to obedience classes.",
            "Every Thursday Maya takes Maya's dog to obedience classes",
        ),
        (
            "Gina sells mugs at the Sunday market in Haarlem.",
            "Gina sells mugs at the Sunday market in Haarlem",
        ),
    ],
)
def test_whole_sentences_stay_grammatical(text: str, fact: str) -> None:
    assert texts(chat("Maya", text)) == [fact]


# ------------------------------------------------------------------ the labelled sample


def test_precision_on_the_labelled_sample() -> None:
    """Measured 0.951 precision, 0.796 recall (0.548 / 0.816 before issue 14)."""
    results = fact_quality.run(fact_quality.load_sample())
    assert results["turns"] >= 40
    assert results["precision"] >= 0.85, results["wrong"]
    assert results["recall"] >= 0.7, results["missed"]
    assert results["kinds"]["assistant"]["precision"] >= 0.8, results["wrong"]
    assert results["assistant_fact_share"] <= 0.3


def test_the_match_rule() -> None:
    assert fact_quality.jaccard("Tom deploys on Render", "Tom and others deploy on Render") >= 0.5
    assert fact_quality.jaccard("Maya loves that name", "Maya is allergic to dogs") < 0.5


# ------------------------------------------------------------------ the write path


@pytest.fixture(scope="module")
def client(settings: Settings, elephant: Elephant) -> Iterator[Client]:
    with api_client(settings, elephant) as test_client:
        yield test_client


CONVERSATION = {
    "session_date": "2024-04-02T09:00:00Z",
    "source": "chat",
    "force": True,
    "turns": [
        {
            "speaker": "Priya",
            "text": "I'm planning a trip to Japan with my husband Arjun in late May.",
            "id": "B1",
        },
        {"speaker": "Assistant", "text": ANSWER, "id": "B2"},
        {"speaker": "Priya", "text": "Thanks! Arjun is vegetarian.", "id": "B3"},
    ],
}


def stored_facts(elephant: Elephant, tenant: str) -> list[tuple[Any, ...]]:
    """(text, confidence, metadata, source_turn_ids) by text."""
    with elephant.db.tenant(tenant) as conn:
        return conn.execute(
            "SELECT text, confidence, metadata, source_turn_ids FROM facts ORDER BY text"
        ).fetchall()


def test_an_assistant_fact_is_stored_with_said_by_assistant(
    client: Client, elephant: Elephant
) -> None:
    response = client.post(
        "/commit_conversation",
        json=CONVERSATION,
        params={"wait": "true"},
        headers={"X-Elephant-Tenant": "fq-offline"},
    )
    assert response.status_code == 201, response.text
    rows = stored_facts(elephant, "fq-offline")
    by_turn = {tuple(row[3]): row for row in rows}
    assert set(by_turn) == {("B1",), ("B2",), ("B3",)}, rows
    text, confidence, metadata, _ = by_turn[("B2",)]
    assert "Hoshinoya" in text
    assert metadata == {"said_by": "assistant"}
    assert confidence <= 0.5
    assert by_turn[("B1",)][2] == {} and by_turn[("B3",)][2] == {}


def test_from_assistant_false_stores_no_assistant_fact(elephant: Elephant) -> None:
    settings = elephant.settings.model_copy(update={"facts": FactsSettings(from_assistant=False)})
    quiet = Elephant(settings=settings, db=elephant.db, embedder=elephant.embedder, llm=None)
    conversation = ConversationIn.model_validate(CONVERSATION)
    commit_conversation(quiet, "fq-no-assistant", conversation, wait=True)
    rows = stored_facts(elephant, "fq-no-assistant")
    assert rows and all(row[3] != ["B2"] and row[2] == {} for row in rows), rows


def test_llm_facts_citing_only_assistant_turns_are_marked(elephant: Elephant) -> None:
    answer = {
        "facts": [
            {"text": "Priya is planning a trip to Japan", "source_turn_ids": ["B1"]},
            {
                "text": "The assistant recommended the ryokan Hoshinoya in Kyoto",
                "confidence": 0.9,
                "source_turn_ids": ["B2"],
            },
            {
                "text": "Priya and Arjun will stay at Hoshinoya",
                "confidence": 0.9,
                "source_turn_ids": ["B2", "B3"],
            },
        ]
    }
    llm = ScriptedLLM({"FactsResponse": [answer]})
    with_llm = Elephant(
        settings=elephant.settings, db=elephant.db, embedder=elephant.embedder, llm=llm
    )
    commit_conversation(with_llm, "fq-llm", ConversationIn.model_validate(CONVERSATION), wait=True)
    system = next(call[1] for call in llm.calls if call[0] == "FactsResponse")
    assert system == extract_facts.SYSTEM and "headings" in system
    rows = {row[0]: row for row in stored_facts(elephant, "fq-llm")}
    assert rows["The assistant recommended the ryokan Hoshinoya in Kyoto"][1:3] == (
        pytest.approx(0.5),
        {"said_by": "assistant"},
    )
    assert rows["Priya and Arjun will stay at Hoshinoya"][1:3] == (pytest.approx(0.9), {})
    assert rows["Priya is planning a trip to Japan"][2] == {}
