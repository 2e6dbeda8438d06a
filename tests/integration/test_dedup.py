"""Dedup never drops new information (issue 12): the rule, then the write path over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from app.config import DedupSettings, Settings
from app.providers.embedder import Embedder
from app.services.memory.dedup import close_enough, describe, differences, screen
from app.services.runtime import Elephant
from tests.conftest import api_client

Client = TestClient  # type: ignore[type-arg]
RULES = DedupSettings()

# The issue's examples: each pair says something else, so both must be kept.
UPDATES = [
    ("Carol is allergic to peanuts.", "Carol is not allergic to peanuts.", "negation none -> not"),
    (
        "Alice flew to Lisbon on 17 May 2023.",
        "Alice flew to Lisbon on 21 May 2023.",
        "date 17 May 2023 -> 21 May 2023",
    ),
    (
        "Dave earns a salary of 50000 per year at Initech.",
        "Dave earns a salary of 90000 per year at Initech.",
        "number 50000 -> 90000",
    ),
    (
        "The quarterly planning meeting with Globex is on Monday at 10am.",
        "The quarterly planning meeting with Globex is on Friday at 3pm.",
        "time 10am -> 3pm; date on Monday -> on Friday",
    ),
    (
        "The API server for Acme runs on port 8080.",
        "The API server for Acme runs on port 9090.",
        "number 8080 -> 9090",
    ),
    (
        "Project Kite1 ships next week.",
        "Project Kite9 ships next week.",
        "identifier Kite1 -> Kite9",
    ),
]


# ------------------------------------------------------------------ the rule


@pytest.mark.parametrize(("stored", "candidate", "expected"), UPDATES)
def test_the_issue_examples_differ(stored: str, candidate: str, expected: str) -> None:
    assert describe(differences(stored, candidate)) == expected


@pytest.mark.parametrize(
    ("stored", "candidate", "kind"),
    [
        ("Deploy v2.3.1 to production.", "Deploy v2.3.2 to production.", "identifier"),
        ("Python 3.11 is required.", "Python 3.12 is required.", "number"),
        ("Mail dan@acme.com the invoice.", "Mail dana@acme.com the invoice.", "identifier"),
        ("Bob's salary is $50,000.", "Bob's salary is $55,000.", "number"),
        ("The trip lasts 3 days.", "The trip lasts 3 weeks.", "unit"),
        ("The lamp cost 40 dollars.", "The lamp cost 40 euros.", "unit"),
        ("Erin runs 5 km a day.", "Erin runs 5 miles a day.", "unit"),
        ("Dave leads the data team.", "Erin leads the data team.", "name"),
        ("Alice owes Bob 50 dollars.", "Bob owes Alice 50 dollars.", "order"),
        ("Judy prefers tea over coffee.", "Judy prefers coffee over tea.", "order"),
        ("The sync is in the blue room.", "The sync is in the green room.", "words"),
        ("Carol is allergic to peanuts.", "Carol is allergic to peanuts and sesame.", "words"),
        ("The deploy happens before lunch.", "The deploy happens after lunch.", "words"),
        ("Frank never drinks coffee.", "Frank drinks coffee.", "negation"),
        ("The release is at noon.", "The release is at midnight.", "time"),
    ],
)
def test_updates_of_every_kind_differ(stored: str, candidate: str, kind: str) -> None:
    found = differences(stored, candidate)
    assert [d.kind for d in found] == [kind], describe(found)


@pytest.mark.parametrize(
    ("stored", "candidate"),
    [
        ("Alice moved to Berlin in June 2024", "In June 2024, Alice relocated to Berlin"),
        ("Bob's salary is $50,000.", "Bob's salary is 50000 dollars."),
        ("Bob's salary is 50k.", "Bob's salary is 50,000."),
        ("The trip lasts 3 days.", "The trip lasts three days."),
        ("The sync is at 15:00.", "The sync is at 3 pm."),
        ("We met on May 17th, 2023.", "We met on 17 May 2023."),
        ("Carol never eats meat.", "Carol doesn't eat meat."),
        ("Erin moves to Oslo.", "Erin moved to Oslo."),
        ("In Osaka, Acme has 50 employees.", "Acme has 50 employees in Osaka."),
        ("Bob's dog is named Max.", "bob\u2019s dog is named Max!!"),
        ("The API server runs on port 8080.", "  The API  server runs on port 8080\n"),
    ],
)
def test_paraphrases_and_repeats_carry_the_same_information(stored: str, candidate: str) -> None:
    assert differences(stored, candidate) == []


def test_screen_merges_only_into_a_close_neighbour_with_the_same_information() -> None:
    text = "The API server for Acme runs on port 9090."
    neighbours = [
        ("m-8080", "The API server for Acme runs on port 8080.", 0.99),
        ("m-9090", "The API server for Acme runs on port 9090!", 0.98),
    ]
    screening = screen(text, neighbours, RULES)
    assert screening.duplicate is not None and screening.duplicate.memory_id == "m-9090"
    assert [m.memory_id for m in screening.differing] == ["m-8080"]
    assert describe(screening.differing[0].differences) == "number 8080 -> 9090"
    kept = screen(text, neighbours[:1], RULES)
    assert kept.duplicate is None and len(kept.differing) == 1


def test_the_cosine_rule_still_comes_first() -> None:
    same = "Alice moved to Berlin in June 2024"
    assert not close_enough(0.91, same, same, RULES)
    assert close_enough(0.95, same, "something else entirely", RULES)
    assert close_enough(0.93, same, "In June 2024, Alice relocated to Berlin", RULES)
    far = screen(same, [("m", same + ".", 0.5)], RULES)
    assert far.duplicate is None and far.differing == ()


def test_a_paraphrase_merges_when_the_embedder_says_it_is_close(embedder: Embedder) -> None:
    stored, candidate = (
        "Alice moved to Berlin in June 2024",
        "In June 2024, Alice relocated to Berlin",
    )
    vectors = embedder.embed_documents([stored, candidate])
    cosine = float(vectors[0] @ vectors[1])
    screening = screen(candidate, [("m", stored, cosine)], RULES)
    assert screening.duplicate is not None, cosine


# ------------------------------------------------------------------ over HTTP


@pytest.fixture(scope="module")
def client(settings: Settings, elephant: Elephant) -> Iterator[Client]:
    with api_client(settings, elephant) as test_client:
        yield test_client


def post(client: Client, path: str, body: Any, tenant: str, **params: Any) -> Any:
    return client.post(path, json=body, params=params, headers={"X-Elephant-Tenant": tenant})


def last_reason(elephant: Elephant, tenant: str) -> str:
    with elephant.db.tenant(tenant) as conn:
        row = conn.execute("SELECT reason FROM admission_log ORDER BY id DESC LIMIT 1").fetchone()
    assert row is not None
    return str(row[0])


@pytest.mark.parametrize(("index", "update"), list(enumerate(UPDATES)))
def test_an_update_is_stored_as_a_second_memory(
    client: Client, elephant: Elephant, index: int, update: tuple[str, str, str]
) -> None:
    tenant = f"update-{index}"
    stored, candidate, expected = update
    first = post(client, "/commit", {"text": stored}, tenant)
    assert first.status_code == 201, first.text
    second = post(client, "/commit", {"text": candidate}, tenant)
    assert second.status_code == 201, second.text
    body = second.json()
    assert body["status"] == "stored" and body["memory_id"] != first.json()["memory_id"]
    reason = last_reason(elephant, tenant)
    assert f"near duplicate of {first.json()['memory_id']}" in reason
    assert f"but differs: {expected}" in reason
    assert body["gate"]["reason"] == reason


def test_force_stores_a_near_duplicate(client: Client, elephant: Elephant) -> None:
    text = "Bob adopted a golden retriever named Max in March 2022 from the Denver shelter"
    first = post(client, "/commit", {"text": text}, "force-near").json()
    merged = post(client, "/commit", {"text": text + "!!"}, "force-near").json()
    assert merged["status"] == "duplicate" and merged["memory_id"] == first["memory_id"]
    assert "same information" in merged["gate"]["reason"]
    forced = post(client, "/commit", {"text": text + "!!", "force": True}, "force-near")
    assert forced.status_code == 201, forced.text
    body = forced.json()
    assert body["status"] == "stored" and body["memory_id"] != first["memory_id"]
    assert body["gate"]["decision"] == "forced"
    assert f"near duplicate of {first['memory_id']}" in last_reason(elephant, "force-near")
    assert "not merged: force" in last_reason(elephant, "force-near")


def test_an_exact_repeat_is_still_a_duplicate_even_with_force(
    client: Client, elephant: Elephant
) -> None:
    text = "Grace keeps the spare office key in the top drawer of the blue cabinet"
    first = post(client, "/commit", {"text": text}, "exact").json()
    for body in ({"text": text}, {"text": "  " + text.upper(), "force": True}):
        again = post(client, "/commit", body, "exact")
        assert again.status_code == 200
        assert again.json()["status"] == "duplicate"
        assert again.json()["memory_id"] == first["memory_id"]
    assert "already stored, force does not store it twice" in last_reason(elephant, "exact")
    with elephant.db.tenant("exact") as conn:
        rows = conn.execute("SELECT seen_count FROM memories").fetchall()
    assert rows == [(3,)]


def test_a_paraphrase_still_merges(client: Client) -> None:
    first = post(client, "/commit", {"text": "Alice moved to Berlin in June 2024"}, "para").json()
    again = post(client, "/commit", {"text": "In June 2024, Alice relocated to Berlin"}, "para")
    assert again.status_code == 200
    assert again.json()["status"] == "duplicate"
    assert again.json()["duplicate_of"] == first["memory_id"]


def _conversation(conversation_id: str, distance: str) -> dict[str, Any]:
    return {
        "conversation_id": conversation_id,
        "session_date": "2023-05-08",
        "turns": [
            {"speaker": "Caroline", "text": "How was the Denver half marathon on Sunday?"},
            {"speaker": "Melanie", "text": f"Great! I ran {distance} km with my sister Jo."},
            {"speaker": "Caroline", "text": "Amazing, you trained for months for that race."},
        ],
    }


def test_a_window_that_differs_by_a_number_is_stored(client: Client, elephant: Elephant) -> None:
    first = post(client, "/commit_conversation", _conversation("run-1", "21"), "windows").json()
    assert first["windows"]["stored"] == 1
    second = post(client, "/commit_conversation", _conversation("run-2", "42"), "windows")
    assert second.status_code == 201, second.text
    [window] = second.json()["windows"]["items"]
    assert window["status"] == "stored"
    assert window["memory_id"] != first["windows"]["items"][0]["memory_id"]
    assert "but differs: number 21 km -> 42 km" in window["reason"]
    repeat = post(client, "/commit_conversation", _conversation("run-3", "42"), "windows").json()
    assert repeat["windows"]["items"][0]["status"] == "duplicate"


def test_the_newer_value_reaches_facts(client: Client, elephant: Elephant) -> None:
    """Both texts are stored and both go through extraction. The offline contradiction
    rules have no pattern for "runs on port", so no contradiction is recorded here and
    both facts stay active (with an LLM configured, the detector judges the pair)."""
    tenant = "port-facts"
    old, new, _ = UPDATES[4]
    first = post(client, "/commit", {"text": old}, tenant, wait="true").json()
    second = post(client, "/commit", {"text": new}, tenant, wait="true").json()
    assert second["status"] == "stored" and second["job_status"] == "done"
    with elephant.db.tenant(tenant) as conn:
        memories = conn.execute("SELECT text FROM memories ORDER BY created_at").fetchall()
        facts = conn.execute(
            "SELECT text, status, memory_id::text FROM facts ORDER BY recorded_at"
        ).fetchall()
        contradictions = conn.execute("SELECT count(*) FROM contradictions").fetchone()
    assert [row[0] for row in memories] == [old, new]
    assert facts == [
        ("The API server for Acme runs on port 8080", "active", first["memory_id"]),
        ("The API server for Acme runs on port 9090", "active", second["memory_id"]),
    ]
    assert contradictions == (0,)
