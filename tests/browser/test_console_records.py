"""The console's Memories and Facts pages: lists with paging and filters, a memory with its
gate decision and facts, and a fact's timeline with its chain and contradiction.

Against a real server (console_site) over this module's database, seeded through the
real commit path (offline extractor, gate and contradiction rules); HTTP checks with a
signed-in client, and Debian's chromium for what a person sees.
"""

from __future__ import annotations

import html
import re
from datetime import datetime
from typing import Any

import pytest

from app.services.memory.commit import commit_note
from app.services.memory.schemas import NoteIn
from app.services.runtime import Elephant
from tests.console_support import (
    ConsoleSite,
    follow,
    foreign_requests,
    requests_made,
    screenshot,
    sign_in,
    signed_in_client,
    text_of,
    wait_for,
)

BERLIN = "Alice lives in Berlin"
LISBON = "Alice moved to Lisbon"
OTHER = "Priya's flight to Lima leaves on 14 March 2027 from gate B12"


def _note(elephant: Elephant, tenant: str, text: str, **extra: Any) -> str:
    result = commit_note(elephant, tenant, NoteIn(text=text, **extra), wait=True)
    assert result.status == "stored" and result.memory_id, result
    return result.memory_id


def _fact_of(elephant: Elephant, tenant: str, memory_id: str) -> str:
    with elephant.db.tenant(tenant) as conn:
        row = conn.execute(
            "SELECT id::text FROM facts WHERE memory_id = %s LIMIT 1", (memory_id,)
        ).fetchone()
    assert row is not None, "the offline extractor found no fact"
    return str(row[0])


@pytest.fixture(scope="module")
def seeded(console_site: ConsoleSite, elephant: Elephant) -> dict[str, str]:
    """Berlin, then Lisbon (which supersedes it), and an unrelated note with metadata."""
    tenant = console_site.tenant
    day = datetime.fromisoformat
    berlin = _note(elephant, tenant, BERLIN, occurred_at=day("2019-05-01T00:00:00+00:00"))
    # forced: the offline gate scores it right at the threshold, and this is about facts
    moved = day("2023-09-01T00:00:00+00:00")
    lisbon = _note(elephant, tenant, LISBON, occurred_at=moved, force=True)
    other = _note(elephant, tenant, OTHER, source="travel", metadata={"trip": "Peru <2027>"})
    return {
        "berlin_memory": berlin,
        "lisbon_memory": lisbon,
        "other_memory": other,
        "berlin": _fact_of(elephant, tenant, berlin),
        "lisbon": _fact_of(elephant, tenant, lisbon),
    }


def test_the_memory_list_filters_and_pages(
    console_site: ConsoleSite, seeded: dict[str, str]
) -> None:
    base = f"/ui/t/{console_site.tenant}"
    with signed_in_client(console_site, console_site.keys["read"]) as client:
        listing = client.get(f"{base}/memories")
        assert listing.status_code == 200
        assert f'href="{base}/memories/{seeded["other_memory"]}"' in listing.text
        assert "3 memories match" in text_of(listing.text)
        assert 'aria-current="page">Memories<' in listing.text

        travel = client.get(f"{base}/memories", params={"source": "travel", "kind": "note"})
        assert "1 memory matches" in text_of(travel.text)
        assert seeded["berlin_memory"] not in travel.text
        assert (
            client.get(f"{base}/memories", params={"kind": "window"}).text.count(
                'class="record-link"'
            )
            == 0
        )

        first = client.get(f"{base}/memories", params={"limit": 2})
        assert first.text.count('class="record-link"') == 2
        following = re.search(r'id="next-page" href="([^"]+)"', first.text)
        assert following is not None
        second = client.get(html.unescape(following.group(1)))
        assert second.status_code == 200 and second.text.count('class="record-link"') == 1
        assert "limit=2" in following.group(1) and "First page" in second.text
        shown = set(re.findall(r'memories/([0-9a-f-]{36})"', first.text + second.text))
        assert len(shown) == 3

        for params in ({"kind": "poem"}, {"limit": 0}, {"cursor": "nope"}):
            refused = client.get(f"{base}/memories", params=params)
            assert refused.status_code == 422, params
            assert refused.headers["content-type"].startswith("text/html")


def test_a_memory_shows_its_text_metadata_decision_and_facts(
    console_site: ConsoleSite, seeded: dict[str, str]
) -> None:
    base = f"/ui/t/{console_site.tenant}"
    with signed_in_client(console_site, console_site.keys["read"]) as client:
        page = client.get(f"{base}/memories/{seeded['lisbon_memory']}")
        assert page.status_code == 200
        words = text_of(page.text)
        assert LISBON in words and "forced" in words and "2023-09-01" in words
        assert f'href="{base}/facts/{seeded["lisbon"]}"' in page.text
        other = client.get(f"{base}/memories/{seeded['other_memory']}")
        assert "&#34;trip&#34;: &#34;Peru &lt;2027&gt;&#34;" in other.text  # escaped, as text
        assert "Peru <2027>" not in other.text
        assert client.get(f"{base}/memories/{'0' * 8}-0000-0000-0000-{'0' * 12}").status_code == 404
        assert client.get(f"{base}/memories/not-an-id").status_code == 422


def test_the_fact_list_filters_by_status_and_memory(
    console_site: ConsoleSite, seeded: dict[str, str]
) -> None:
    base = f"/ui/t/{console_site.tenant}"
    with signed_in_client(console_site, console_site.keys["read"]) as client:
        closed = client.get(f"{base}/facts", params={"status": "superseded"})
        assert closed.status_code == 200
        assert f'facts/{seeded["berlin"]}"' in closed.text
        assert f'facts/{seeded["lisbon"]}"' not in closed.text
        current = client.get(f"{base}/facts", params={"status": "active"})
        assert f'facts/{seeded["lisbon"]}"' in current.text
        assert f'facts/{seeded["berlin"]}"' not in current.text
        of_memory = client.get(f"{base}/facts", params={"memory": seeded["other_memory"]})
        assert seeded["berlin"] not in of_memory.text and "Lima" in of_memory.text
        assert client.get(f"{base}/facts", params={"status": "old"}).status_code == 422
        assert client.get(f"{base}/facts", params={"memory": "x"}).status_code == 422


def test_a_fact_page_over_http_draws_an_accessible_timeline(
    console_site: ConsoleSite, seeded: dict[str, str]
) -> None:
    base = f"/ui/t/{console_site.tenant}"
    with signed_in_client(console_site, console_site.keys["read"]) as client:
        page = client.get(f"{base}/facts/{seeded['berlin']}")
        assert page.status_code == 200
        assert 'role="img"' in page.text and '<title id="tl-title">' in page.text
        assert page.text.count('class="tl-valid') == 2 and page.text.count('class="tl-known') == 2
        words = text_of(page.text)
        assert "different residence: 'Berlin' vs 'Lisbon'" in words
        assert "2019-05-01" in words and "2023-09-01" in words  # valid from, valid to
        assert f'href="{base}/facts/{seeded["lisbon"]}"' in page.text
        assert client.get(f"{base}/facts/{seeded['berlin_memory']}").status_code == 404


def test_fact_timeline_in_the_browser(
    chromium: Any, console_site: ConsoleSite, seeded: dict[str, str]
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    sign_in(chromium, console_site, console_site.keys["read"])
    requests_made(chromium)  # forget the sign-in's requests
    base = f"{console_site.url}/ui/t/{console_site.tenant}"

    chromium.get(f"{base}/memories")
    wait_for(chromium, "#memory-list")
    for field in chromium.find_elements(By.CSS_SELECTOR, "form.filters input, form.filters select"):
        label = chromium.find_elements(By.CSS_SELECTOR, f"label[for='{field.get_attribute('id')}']")
        assert label, f"no label for {field.get_attribute('name')}"
    screenshot(chromium, "records-memories")

    follow(chromium, chromium.find_element(By.LINK_TEXT, "Facts").click, "#fact-list")
    select = chromium.find_element(By.ID, "f-status")
    select.send_keys("superseded")
    submit = chromium.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]")
    follow(chromium, submit.click, "#fact-list")
    assert "status=superseded" in chromium.current_url
    screenshot(chromium, "records-facts-superseded")
    link = chromium.find_element(By.PARTIAL_LINK_TEXT, "Berlin")
    follow(chromium, lambda: link.send_keys(Keys.ENTER), "svg.timeline-chart")  # by keyboard
    chain = wait_for(chromium, "#fact-chain")
    steps = chain.find_elements(By.CSS_SELECTOR, "li.chain-link")
    assert [step.get_attribute("data-step") for step in steps] == ["0", "1"]
    assert "Berlin" in steps[0].text and "superseded" in steps[0].text
    assert (
        "different residence: 'Berlin' vs 'Lisbon'"
        in steps[0].find_element(By.CSS_SELECTOR, ".reason").text
    )
    reason = chromium.find_element(By.CSS_SELECTOR, "#fact-contradictions td.reason").text
    assert reason == "different residence: 'Berlin' vs 'Lisbon'"
    assert chromium.find_element(By.ID, "fact-status").text == "superseded"
    chart = chromium.find_element(By.CSS_SELECTOR, "svg.timeline-chart")
    assert chart.get_attribute("role") == "img" and chart.size["width"] > 300
    screenshot(chromium, "fact-timeline-superseded")

    later = steps[1].find_element(By.TAG_NAME, "a")  # to what replaced it
    chain = follow(chromium, later.click, "#fact-chain")
    assert [s.get_attribute("data-step") for s in chain.find_elements(By.CSS_SELECTOR, "li")] == [
        "-1",
        "0",
    ]
    assert chromium.find_element(By.ID, "fact-status").text == "active"
    assert LISBON in chromium.find_element(By.ID, "fact-text").text
    screenshot(chromium, "fact-timeline-current")

    follow(chromium, chromium.find_element(By.ID, "fact-memory").click, "#memory-text")
    assert chromium.find_element(By.ID, "memory-text").text == LISBON
    assert "forced" in chromium.find_element(By.ID, "memory-decisions").text
    screenshot(chromium, "records-memory")
    assert foreign_requests(chromium, console_site) == []
