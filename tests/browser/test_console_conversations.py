"""The console's Conversations pages: the list, a transcript with its windows marked, and
session handoffs, over HTTP and in Debian's chromium against a real server."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime
from typing import Any

import pytest

from app.services.memory.commit import commit_conversation
from app.services.memory.schemas import ConversationIn, TurnIn
from app.services.memory.sessions import SessionCloseIn, close_session
from app.services.runtime import Elephant
from tests.console_support import (
    ConsoleSite,
    foreign_requests,
    requests_made,
    screenshot,
    sign_in,
    signed_in_client,
    wait_for,
)

TURNS = [
    ("Caroline", "I went to the LGBTQ support group yesterday and it was powerful."),
    ("Melanie", "That sounds wonderful. What did you learn there?"),
    ("Caroline", "The adoption agency in Graz accepts single parents, so I applied."),
    ("Melanie", "Congratulations on applying to the adoption agency!"),
    ("Caroline", "Thanks. I also started painting <b>sunsets</b> on weekends."),
    ("Melanie", "I ran a charity race for mental health last Saturday."),
]
MAY_8 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


@pytest.fixture(scope="module")
def seeded(console_site: ConsoleSite, elephant: Elephant) -> dict[str, Any]:
    def talk(
        conversation_id: str, turns: list[tuple[str, str, datetime | None]], stride: int
    ) -> ConversationIn:
        return ConversationIn(
            turns=[TurnIn(speaker=who, text=text, timestamp=when) for who, text, when in turns],
            conversation_id=conversation_id,
            window_size=3,
            stride=stride,
        )

    dated: list[tuple[str, str, datetime | None]] = [(who, text, MAY_8) for who, text in TURNS]
    first = commit_conversation(elephant, console_site.tenant, talk("caroline-may", dated, 2))
    # its first window again (a duplicate), then small talk the gate rejects
    mixed = [*dated[:3], ("a", "ok", None), ("b", "yes", None), ("a", "ok", None)]
    again = commit_conversation(elephant, console_site.tenant, talk("caroline-copy", mixed, 3))
    closed = close_session(
        elephant,
        console_site.tenant,
        SessionCloseIn(
            project="console-docs",
            transcript="user: We decided to draw charts as inline SVG.\n"
            "assistant: Next we need to write the browser tests.",
        ),
        wait=False,
    )
    return {"first": first, "again": again, "closed": closed}


def test_the_list_links_every_conversation_and_pages(
    console_site: ConsoleSite, seeded: dict[str, Any]
) -> None:
    with signed_in_client(console_site, console_site.keys["read"]) as client:
        listing = client.get("/ui/t/console/conversations")
        assert listing.status_code == 200, listing.text[:500]
        text = listing.text
        assert "caroline-may" in text and "caroline-copy" in text
        assert f'/ui/t/console/conversations/{seeded["first"].conversation_id}"' in text
        assert "session · console-docs" in text
        first = client.get("/ui/t/console/conversations?limit=1")
        found = re.search(r'rel="next" href="([^"]+)"', first.text)
        assert found is not None
        second = client.get(html.unescape(found.group(1)))
        assert second.status_code == 200 and "First page" in second.text
        bad = client.get("/ui/t/console/conversations?cursor=garbage")
        assert bad.status_code == 422 and "cursor" in bad.text
        assert client.get("/ui/t/console/conversations?limit=lots").status_code == 422
        assert client.get("/ui/t/console/conversations?limit=0").status_code == 422
        by_source = client.get("/ui/t/console/conversations?source=session")
        assert "console-docs" in by_source.text and "caroline-may" not in by_source.text


def test_a_transcript_shows_every_turn_its_windows_and_escapes_text(
    console_site: ConsoleSite, seeded: dict[str, Any]
) -> None:
    first = seeded["first"]
    with signed_in_client(console_site, console_site.keys["read"]) as client:
        page = client.get("/ui/t/console/conversations/caroline-may")
        assert page.status_code == 200, page.text[:500]
        text = page.text
        for seq in range(len(TURNS)):
            assert f'id="turn-{seq}"' in text
        assert "&lt;b&gt;sunsets&lt;/b&gt;" in text and "<b>sunsets" not in text
        for window in first.windows:
            assert (
                f'href="#turn-{window.turn_start}">{window.turn_start}\u2013{window.turn_end}<'
                in text
            )
            if window.memory_id and window.status == "stored":
                assert f"/ui/t/console/memories/{window.memory_id}" in text
        assert text.count('class="window-row"') == len(first.windows)
        copy = client.get(f"/ui/t/console/conversations/{seeded['again'].conversation_id}")
        assert [w.status for w in seeded["again"].windows] == ["duplicate", "rejected"]
        assert re.findall(r'data-status="(\w+)"', copy.text) == ["duplicate", "rejected"]
        duplicate_of = seeded["again"].windows[0].memory_id
        assert f'/ui/t/console/memories/{duplicate_of}">duplicate of' in copy.text
        assert client.get("/ui/t/console/conversations/nothing-here").status_code == 404


def test_handoffs_are_listed_and_shown_with_their_session(
    console_site: ConsoleSite, seeded: dict[str, Any]
) -> None:
    closed = seeded["closed"]
    with signed_in_client(console_site, console_site.keys["read"]) as client:
        page = client.get("/ui/t/console/conversations/handoffs")
        assert page.status_code == 200
        assert "console-docs" in page.text
        assert f"/ui/t/console/conversations/{closed.conversation_id}" in page.text
        for decision in closed.handoff.decisions:
            assert html.escape(decision, quote=False) in page.text
        session = client.get(f"/ui/t/console/conversations/{closed.conversation_id}")
        assert f'id="handoff-{closed.handoff.id}"' in session.text
        assert client.get("/ui/t/console/conversations/handoffs?project=none").status_code == 200


def test_in_a_browser_a_transcript_marks_its_windows(
    chromium: Any, console_site: ConsoleSite, seeded: dict[str, Any]
) -> None:
    from selenium.webdriver.common.by import By

    first = seeded["first"]
    sign_in(chromium, console_site, console_site.keys["read"])
    requests_made(chromium)  # forget earlier pages
    chromium.get(f"{console_site.url}/ui/t/console/conversations")
    wait_for(chromium, "table#conversations")
    screenshot(chromium, "conversation-list")
    chromium.find_element(By.LINK_TEXT, "caroline-may").click()
    wait_for(chromium, "table#transcript")
    turns = chromium.find_elements(By.CSS_SELECTOR, "#transcript tr.turn")
    assert len(turns) == len(TURNS)
    assert "adoption agency in Graz" in turns[2].text
    rows = chromium.find_elements(By.CSS_SELECTOR, "#windows tr.window-row")
    assert [row.get_attribute("data-status") for row in rows] == [w.status for w in first.windows]
    # every turn of a window carries its bracket; the window's first turn opens it
    window = first.windows[1]
    opening = chromium.find_element(By.ID, f"turn-{window.turn_start}")
    assert opening.find_elements(By.CSS_SELECTOR, f".bracket.{window.status}.start")
    assert "1" in (opening.get_attribute("data-windows") or "").split()
    # a window's range link goes to its first turn, which the page highlights
    rows[1].find_element(By.CSS_SELECTOR, "a[href^='#turn-']").click()
    target = wait_for(chromium, "tr.turn:target")
    assert target.get_attribute("id") == f"turn-{window.turn_start}"
    screenshot(chromium, "conversation-transcript")
    chromium.get(f"{console_site.url}/ui/t/console/conversations/caroline-copy")
    wait_for(chromium, "#transcript .bracket.rejected.start")
    assert chromium.find_elements(By.CSS_SELECTOR, "#transcript .bracket.duplicate.end")
    screenshot(chromium, "conversation-duplicate-and-rejected")
    chromium.get(f"{console_site.url}/ui/t/console/conversations/handoffs")
    wait_for(chromium, "#handoffs article.handoff")
    screenshot(chromium, "conversation-handoffs")
    label = chromium.find_element(By.CSS_SELECTOR, "label[for=handoffs-project]")
    assert "Project" in label.text
    assert foreign_requests(chromium, console_site) == []
