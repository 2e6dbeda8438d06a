"""Every console page, with real data, checked for what a browser and a keyboard need.

One tenant gets a bit of everything (notes, a conversation with a rejected window, a
fact that superseded another, a graph), then every page is read over HTTP and parsed:
one h1, a label for every control, no inline script or style (the CSP would block
them), nothing from another origin, unique ids, charts described for screen readers.
In chromium, every page loads without a single CSP violation or foreign request, and a
search can be run with the keyboard alone.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Any

import pytest

from app.services.graph import operations as ops
from app.services.graph.models import RecordIn
from app.services.memory import records
from app.services.memory.commit import commit_conversation, commit_note
from app.services.memory.schemas import ConversationIn, NoteIn, TurnIn
from app.services.runtime import Elephant
from tests.console_support import (
    ConsoleSite,
    foreign_requests,
    requests_made,
    sign_in,
    signed_in_client,
    wait_for,
)

CONTROLS = ("input", "select", "textarea")
UNLABELLED_TYPES = ("hidden", "submit", "button", "reset", "image")


class Page(HTMLParser):
    """What the checks need from one page's HTML."""

    def __init__(self) -> None:
        super().__init__()
        self.h1 = 0
        self.lang: str | None = None
        self.title = ""
        self.ids: Counter[str] = Counter()
        self.label_for: set[str] = set()
        self.controls: list[dict[str, str | None]] = []  # with the label around them
        self.open_labels = 0
        self.styles: list[str] = []  # style attributes and on* handlers
        self.scripts: list[str] = []  # inline scripts, external script sources
        self.urls: list[str] = []
        self.svg_images: list[dict[str, str | None]] = []
        self.svg_titles_pending: list[dict[str, str | None]] = []
        self.buttons: list[str] = []
        self._button: list[str] | None = None
        self._in_title = False
        self._script_open = False
        self.th_without_scope = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if attributes.get("id"):
            self.ids[str(attributes["id"])] += 1
        for name, value in attrs:
            if name == "style" or name.startswith("on"):
                self.styles.append(f"<{tag} {name}={value!r}>")
            if name in ("href", "src", "action", "xlink:href") and value:
                self.urls.append(value)
        if tag == "html":
            self.lang = attributes.get("lang")
        elif tag == "h1":
            self.h1 += 1
        elif tag == "title":
            self._in_title = True
        elif tag == "label":
            self.open_labels += 1
            if attributes.get("for"):
                self.label_for.add(str(attributes["for"]))
        elif tag in CONTROLS and attributes.get("type") not in UNLABELLED_TYPES:
            self.controls.append({**attributes, "_wrapped": "yes" if self.open_labels else None})
        elif tag == "script":
            self.scripts.append(attributes.get("src") or "")
            self._script_open = True
        elif tag == "svg" and attributes.get("role") == "img":
            self.svg_images.append(attributes)
        elif tag == "button":
            self._button = [attributes.get("aria-label") or ""]
        elif tag == "th" and "scope" not in attributes:
            self.th_without_scope += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag == "label":
            self.open_labels -= 1
        elif tag == "script":
            self._script_open = False
        elif tag == "button" and self._button is not None:
            self.buttons.append("".join(self._button).strip())
            self._button = None

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        if self._button is not None:
            self._button.append(data)
        if self._script_open and data.strip():
            self.scripts.append("inline: " + data.strip()[:60])


@pytest.fixture(scope="module")
def pages(console_site: ConsoleSite, elephant: Elephant) -> dict[str, str]:
    """A tenant with a bit of everything; returns page name -> path."""
    tenant = console_site.tenant
    when = datetime(2024, 3, 1, tzinfo=UTC)
    first = commit_note(
        elephant,
        tenant,
        NoteIn(text="Noor lives in Ghent and teaches piano", occurred_at=when, force=True),
        wait=True,
    )
    commit_note(
        elephant,
        tenant,
        NoteIn(text="Noor moved to Utrecht", occurred_at=datetime(2025, 1, 5, tzinfo=UTC)),
        wait=True,
    )
    commit_note(elephant, tenant, NoteIn(text="ok thanks"))  # rejected by the gate
    talk = commit_conversation(
        elephant,
        tenant,
        ConversationIn(
            turns=[
                TurnIn(speaker="Noor", text="The recital in Utrecht is on 12 April 2025."),
                TurnIn(speaker="Sam", text="I will bring the sheet music for the Ravel piece."),
                TurnIn(speaker="Noor", text="ok"),
            ],
            conversation_id="recital",
            window_size=2,
            stride=1,
        ),
        wait=True,
    )
    ops.record(
        elephant,
        tenant,
        RecordIn.model_validate(
            {
                "entities": [{"name": "Noor", "entity_type": "person"}, {"name": "Utrecht"}],
                "relations": [{"source": "Noor", "relation_type": "lives_in", "target": "Utrecht"}],
            }
        ),
    )
    fact = records.list_facts(elephant, tenant, memory_id=first.memory_id).items[0]
    base = f"/ui/t/{tenant}"
    return {
        "overview": f"{base}/",
        "search": f"{base}/search?query=Where+does+Noor+live",
        "memories": f"{base}/memories",
        "memory": f"{base}/memories/{first.memory_id}",
        "facts": f"{base}/facts",
        "fact": f"{base}/facts/{fact.id}",
        "gate": f"{base}/gate",
        "graph": f"{base}/graph?entity=Noor",
        "conversations": f"{base}/conversations",
        "conversation": f"{base}/conversations/{talk.conversation_id}",
        "handoffs": f"{base}/conversations/handoffs",
        "erase": f"{base}/erase",
    }


def test_every_page_has_the_basics_a_browser_and_a_screen_reader_need(
    console_site: ConsoleSite, pages: dict[str, str]
) -> None:
    problems: dict[str, list[str]] = {}
    with signed_in_client(console_site, console_site.keys["admin"]) as client:
        for name, path in pages.items():
            answer = client.get(path)
            assert answer.status_code == 200, (name, answer.status_code, answer.text[:300])
            page = Page()
            page.feed(answer.text)
            found = problems.setdefault(name, [])
            if page.h1 != 1:
                found.append(f"{page.h1} h1 elements")
            if page.lang != "en" or not page.title.strip():
                found.append("no lang or title")
            found += [f"duplicate id {i!r}" for i, n in page.ids.items() if n > 1]
            for control in page.controls:
                labelled = (
                    control.get("_wrapped")
                    or control.get("aria-label")
                    or control.get("aria-labelledby")
                    or control.get("id") in page.label_for
                )
                if not labelled:
                    found.append(f"unlabelled {control.get('name') or control}")
            found += [f"inline style or handler {s}" for s in page.styles]
            found += [f"script {s}" for s in page.scripts if s != "/ui/static/console.js"]
            found += [
                f"foreign URL {url}"
                for url in page.urls
                if url.startswith(("http:", "https:", "//"))
                and not url.startswith(console_site.url)
            ]
            found += [
                f"chart without a description {svg}"
                for svg in page.svg_images
                if not (svg.get("aria-label") or svg.get("aria-labelledby"))
            ]
            found += [f"a button without a name on {name}" for text in page.buttons if not text]
            if page.th_without_scope:
                found.append(f"{page.th_without_scope} th without scope")
    assert {name: found for name, found in problems.items() if found} == {}


def test_in_a_browser_no_page_breaks_the_content_policy_or_reaches_elsewhere(
    chromium: Any, console_site: ConsoleSite, pages: dict[str, str]
) -> None:
    sign_in(chromium, console_site, console_site.keys["admin"])
    requests_made(chromium)
    chromium.get_log("browser")  # forget earlier pages
    for name, path in pages.items():
        chromium.get(console_site.url + path)
        wait_for(chromium, "main#main h1")
        errors = [
            entry["message"]
            for entry in chromium.get_log("browser")
            if entry["level"] == "SEVERE" or "Content Security Policy" in entry["message"]
        ]
        assert errors == [], (name, errors)
    assert foreign_requests(chromium, console_site) == []


def test_a_search_runs_from_the_keyboard_alone(
    chromium: Any, console_site: ConsoleSite, pages: dict[str, str]
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    sign_in(chromium, console_site, console_site.keys["read"])
    chromium.get(f"{console_site.url}/ui/t/{console_site.tenant}/search")
    wait_for(chromium, "main#main h1")
    visited = []
    for _ in range(30):  # the query box has the focus on arrival, or Tab reaches it
        active = chromium.switch_to.active_element
        if active.get_attribute("name") == "query":
            break
        visited.append(f"{active.tag_name}:{active.get_attribute('name') or active.text[:20]}")
        active.send_keys(Keys.TAB)
    query = chromium.switch_to.active_element
    assert query.get_attribute("name") == "query", f"Tab never reached the query box: {visited}"
    query.send_keys("Where does Noor live" + Keys.ENTER)
    wait_for(chromium, "mark")
    assert "query=Where+does+Noor+live" in chromium.current_url
    marked = {m.text.lower() for m in chromium.find_elements(By.CSS_SELECTOR, "mark")}
    assert "noor" in marked
