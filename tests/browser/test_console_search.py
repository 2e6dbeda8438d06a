"""The console's search playground: a search as a URL, lane ranks drawn per hit, the query's
words marked, links to the source turns; over HTTP and in Debian's chromium against a
real server (real embedder, offline extractor)."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime
from typing import Any

import pytest

from app.console.lanes import LaneMark, highlight, lane_chart, lane_marks, query_terms
from app.services.memory.commit import commit_conversation, commit_note
from app.services.memory.schemas import ConversationIn, NoteIn, TurnIn
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
    ("Caroline", "Thanks. I also started painting sunsets on weekends."),
    ("Melanie", "I ran a charity race for mental health last Saturday."),
    ("Caroline", "My grandmother gave me a necklace from Sweden."),
]
SEARCH = "/ui/t/console/search"


# ------------------------------------------------------------------ the markup, pure


def test_highlight_marks_whole_words_case_insensitively_and_escapes_the_rest() -> None:
    marked = str(
        highlight("Adoption <b>agency</b>: adoptions & an adoption.", "the ADOPTION of an agency")
    )
    assert marked == (
        "<mark>Adoption</mark> &lt;b&gt;<mark>agency</mark>&lt;/b&gt;: adoptions &amp; an "
        "<mark>adoption</mark>."
    )
    assert query_terms("What did I do in Graz on it?") == ["graz"]
    assert str(highlight("a <script>", "a")) == "a &lt;script&gt;"
    assert str(highlight("x", "<mark>")) == "x"


def test_the_lane_chart_draws_each_lane_with_its_rank_and_says_it_in_words() -> None:
    marks = lane_marks(
        {"windows": 1, "facts": None, "keyword": 7, "graph": None, "preferences": None},
        {"windows": 45, "facts": 15, "keyword": 10, "graph": 0, "preferences": 5},
        {"windows": 1.0, "facts": 1.0, "keyword": 1.0, "graph": 1.0, "preferences": 1.0},
        60,
    )
    assert [m.state for m in marks] == ["ranked", "absent", "ranked", "off", "absent"]
    assert marks[0].score == pytest.approx(1 / 61)
    chart = str(lane_chart(marks, title="Lane ranks of <result> 1"))
    assert chart.startswith('<svg class="lane-chart" role="img"')
    assert "Windows: rank 1 of 45, RRF 0.0164" in chart
    assert "Graph: lane off" in chart and "Facts: not found" in chart
    assert "&lt;result&gt;" in chart and "<result>" not in chart
    assert chart.count('class="lane-bar"') == 2
    assert ">#1<" in chart and ">#7<" in chart and ">off<" in chart
    assert LaneMark("facts", "Facts", None, 15, None).describe() == "Facts: not found"


# ------------------------------------------------------------------ pages


@pytest.fixture(scope="module")
def seeded(console_site: ConsoleSite, elephant: Elephant) -> dict[str, Any]:
    conversation = commit_conversation(
        elephant,
        console_site.tenant,
        ConversationIn(
            turns=[TurnIn(speaker=who, text=text) for who, text in TURNS],
            conversation_id="caroline-may",
            session_date=datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
            window_size=3,
            stride=2,
        ),
        wait=True,
    )
    note = commit_note(
        elephant,
        console_site.tenant,
        NoteIn(
            text="The <b>adoption</b> paperwork for Graz is due on 3 June 2023.",
            source="notes",
        ),
        wait=True,
    )
    return {"conversation": conversation, "note": note}


def test_an_empty_query_shows_just_the_form(console_site: ConsoleSite) -> None:
    with signed_in_client(console_site, console_site.keys["read"]) as client:
        page = client.get(SEARCH)
        assert page.status_code == 200
        assert 'id="search-query"' in page.text and 'for="search-query"' in page.text
        assert 'id="hits"' not in page.text and 'role="alert"' not in page.text
        for lane in ("windows", "facts", "keyword", "graph", "preferences"):
            assert f'id="lane-{lane}" name="lane" value="{lane}" checked' in page.text


def test_a_search_shows_hits_with_lane_charts_marks_and_source_links(
    console_site: ConsoleSite, seeded: dict[str, Any]
) -> None:
    conversation_id = seeded["conversation"].conversation_id
    with signed_in_client(console_site, console_site.keys["read"]) as client:
        page = client.get(SEARCH, params={"query": "adoption agency Graz", "limit": "10"})
        assert page.status_code == 200, page.text[:800]
        text = page.text
        assert text.count('<svg class="lane-chart" role="img"') >= 2
        assert "<mark>adoption</mark>" in text.lower()
        assert re.search(r'class="lane-rank-text">\d+ / \d+<', text)
        assert f"/ui/t/console/conversations/{conversation_id}#turn-" in text
        assert 'id="search-timings"' in text and "Embedding" in text
        # a stored note's markup is text, never markup
        assert "&lt;b&gt;<mark>adoption</mark>&lt;/b&gt;" in text
        assert f'/ui/t/console/memories/{seeded["note"].memory_id}"' in text
        assert 'value="adoption agency Graz"' in text
        facts = re.findall(r'href="/ui/t/console/facts/([0-9a-f-]{36})"', text)
        assert facts, "the offline extractor's facts are found and linked"


def test_switching_lanes_off_takes_them_out_of_the_ranking(
    console_site: ConsoleSite, seeded: dict[str, Any]
) -> None:
    with signed_in_client(console_site, console_site.keys["read"]) as client:
        page = client.get(
            SEARCH, params={"query": "adoption agency", "form": "1", "lane": ["keyword"]}
        )
        assert page.status_code == 200, page.text[:800]
        assert 'id="lane-windows" name="lane" value="windows" checked' not in page.text
        assert 'id="lane-keyword" name="lane" value="keyword" checked' in page.text
        assert "Windows: lane off" in page.text
        assert "Windows: rank" not in page.text and "Facts: rank" not in page.text
        assert "Keyword: rank 1 of" in page.text
        only_facts = client.get(SEARCH, params={"query": "adoption", "kind": "fact"})
        assert 'data-kind="window"' not in only_facts.text
        assert 'data-kind="fact"' in only_facts.text


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"limit": "many"}, "limit"),
        ({"limit": "500"}, "limit"),
        ({"created_after": "someday"}, "created_after"),
        ({"as_of": "2023-13-45"}, "as_of"),
        ({"kind": "poem"}, "kind"),
        ({"form": "1"}, "lanes"),
        ({"form": "1", "lane": "telepathy"}, "lane"),
    ],
)
def test_a_bad_parameter_is_a_422_that_says_what_to_fix(
    console_site: ConsoleSite, params: dict[str, str], says: str
) -> None:
    with signed_in_client(console_site, console_site.keys["read"]) as client:
        page = client.get(SEARCH, params={"query": "adoption", **params})
        assert page.status_code == 422, page.text[:500]
        problem = re.search(r'id="search-problem">([^<]+)<', page.text)
        assert problem is not None and says in html.unescape(problem.group(1))
        assert 'id="search-query"' in page.text  # the form stays, to fix it


def test_in_a_browser_a_search_draws_lane_ranks_and_leads_to_the_turns(
    chromium: Any, console_site: ConsoleSite, seeded: dict[str, Any]
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    sign_in(chromium, console_site, console_site.keys["read"])
    requests_made(chromium)  # forget earlier pages
    chromium.get(f"{console_site.url}{SEARCH}")
    box = wait_for(chromium, "input#search-query")
    assert chromium.switch_to.active_element == box  # the query has the focus
    screenshot(chromium, "search-form")
    box.send_keys("adoption agency in Graz" + Keys.ENTER)
    wait_for(chromium, "#hits li.hit svg.lane-chart")
    assert "query=adoption+agency+in+Graz" in chromium.current_url  # a URL to share
    hits = chromium.find_elements(By.CSS_SELECTOR, "#hits li.hit")
    assert hits
    chart = hits[0].find_element(By.CSS_SELECTOR, "svg.lane-chart")
    assert chart.get_attribute("role") == "img"
    assert "rank" in (chart.get_attribute("aria-label") or "")
    assert len(chart.find_elements(By.CSS_SELECTOR, "g.lane")) == 5
    assert chart.find_elements(By.CSS_SELECTOR, "rect.lane-bar")
    ranks = [cell.text for cell in hits[0].find_elements(By.CSS_SELECTOR, ".lane-rank-text")]
    assert any(re.fullmatch(r"\d+ / \d+", rank) for rank in ranks), ranks
    marks = [m.text.lower() for m in chromium.find_elements(By.CSS_SELECTOR, ".hit-text mark")]
    assert "adoption" in marks and "graz" in marks and "in" not in marks
    screenshot(chromium, "search-results")

    link = chromium.find_element(By.CSS_SELECTOR, "#hits li.hit a.source-turns")
    href = link.get_attribute("href") or ""
    anchor = href.rsplit("#", 1)[1]
    link.click()
    target = wait_for(chromium, "tr.turn:target")
    assert target.get_attribute("id") == anchor
    assert chromium.current_url.endswith(f"#{anchor}")
    assert target.find_elements(By.CSS_SELECTOR, ".bracket.start")
    screenshot(chromium, "search-source-turns")
    assert foreign_requests(chromium, console_site) == []


def test_in_a_browser_a_bad_date_says_what_to_fix_and_lanes_are_keyboard_toggles(
    chromium: Any, console_site: ConsoleSite, seeded: dict[str, Any]
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    sign_in(chromium, console_site, console_site.keys["read"])
    requests_made(chromium)
    chromium.get(f"{console_site.url}{SEARCH}?query=adoption&as_of=yesterday-ish")
    problem = wait_for(chromium, "#search-problem")
    assert "as_of" in problem.text
    screenshot(chromium, "search-bad-date")
    # the options open with the bad value in them; lanes toggle with the keyboard
    graph = chromium.find_element(By.ID, "lane-graph")
    assert graph.is_selected()
    graph.send_keys(Keys.SPACE)
    assert not graph.is_selected()
    field = chromium.find_element(By.ID, "search-as-of")
    field.clear()
    field.send_keys(Keys.ENTER)
    wait_for(chromium, "#hits li.hit")
    assert "lane=graph" not in chromium.current_url and "lane=windows" in chromium.current_url
    assert "Graph: lane off" in (
        chromium.find_element(By.CSS_SELECTOR, "svg.lane-chart").get_attribute("aria-label") or ""
    )
    assert foreign_requests(chromium, console_site) == []
