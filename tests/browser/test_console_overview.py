"""The console's Overview page (/ui/t/<tenant>/): counts, growth, the job queue, the gate,
LLM usage and cost, as charts and as tables.

Against a real server on 127.0.0.1 over this module's database, seeded through the
services: notes committed with wait=True (offline extraction and gate), a job failed
through the queue functions, LLM usage rows through the service that records real
calls. Over HTTP and in Debian's chromium.
"""

from __future__ import annotations

import html
import re
from typing import Any

import httpx
import pytest

from app.api import create_app
from app.config import Settings
from app.providers.llm import LLMUsage
from app.services.jobs import queue
from app.services.memory.commit import commit_note
from app.services.memory.schemas import NoteIn
from app.services.ops.overview import COST_NOT_CONFIGURED
from app.services.ops.stats import stats
from app.services.ops.usage import record_usage
from app.services.runtime import Elephant
from tests.conftest import make_settings, serve_in_thread
from tests.console_support import (
    ConsoleSite,
    foreign_requests,
    requests_made,
    screenshot,
    sign_in,
    signed_in_client,
    wait_for,
)

TENANT = "console"
PAGE = f"/ui/t/{TENANT}/"
JOB_ERROR = "extractor crashed: <b>bad</b> & worse (KeyError 'subject')"
NOTES = (
    "Dana ships the Falcon build to the Berlin office on 3 March 2025.",
    "Priya moved the billing database from MySQL to Postgres 16 in January 2025.",
    "The Kestrel team decided to drop GraphQL and keep the REST API for the mobile app.",
    "Omar's flight to Lisbon for the design review leaves on 14 April 2025 at 09:40.",
)


@pytest.fixture(scope="module")
def seeded(console_site: ConsoleSite, elephant: Elephant) -> dict[str, int]:
    for text in NOTES:
        commit_note(elephant, TENANT, NoteIn(text=text, source="overview-test"), wait=True)
    with elephant.db.tenant(TENANT) as conn:
        job_id = queue.enqueue(conn, TENANT, "extract_facts", {}, max_attempts=1)
        job = queue.claim_one(conn, TENANT, job_id)
        assert job is not None
        assert queue.fail(conn, job, JOB_ERROR, 0.0) == "failed"
        for operation, tokens_in, tokens_out, ok in (
            ("extract_facts", 1200, 300, True),
            ("extract_facts", 800, 0, False),
            ("reflect", 2500, 700, True),
        ):
            usage = LLMUsage("anthropic", "claude-haiku-4-5", tokens_in, tokens_out, 900.0, 1)
            record_usage(conn, TENANT, operation, usage, ok=ok, error=None if ok else "timeout")
    report = stats(elephant, TENANT)
    return {"memories": report.memories.total, "facts": report.facts.total, "job": job_id}


def _text(page: str) -> str:
    """The page's text, tags removed (for asserting on what a reader sees)."""
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def _get(client: httpx.Client, path: str = PAGE) -> str:
    answer = client.get(path)
    assert answer.status_code == 200, answer.text[:500]
    return answer.text


def test_a_read_key_sees_counts_charts_and_tables_but_no_failed_job_details(
    console_site: ConsoleSite, seeded: dict[str, int]
) -> None:
    assert seeded["memories"] >= 3  # the offline gate let the specific notes in
    with signed_in_client(console_site, console_site.keys["read"]) as client:
        page = _get(client)
    text = _text(page)
    assert f"{seeded['memories']:,} memories" in text
    assert f"of {seeded['facts']:,} recorded" in text
    # four charts, each an accessible image
    charts = re.findall(r'<svg xmlns="http://www.w3.org/2000/svg" class="chart[^"]*"[^>]*>', page)
    assert len(charts) == 4
    assert all('role="img"' in tag and "aria-label=" in tag for tag in charts)
    for table in ("growth-table", "queue-table", "usage-by-operation", "usage-by-day"):
        assert f'id="{table}"' in page
    # the queue: counts for everyone, the errors for admins only
    assert 'id="failed-jobs-hidden"' in page
    assert "1 failed job." in text and "admin scope" in text
    assert 'id="failed-jobs"' not in page
    assert "extractor crashed" not in page
    # LLM usage: the numbers, and no price configured means no cost, not $0
    assert "3 calls (1 failed), 4,500 tokens in, 1,000 tokens out" in text
    assert COST_NOT_CONFIGURED in text
    assert "$0" not in text


def test_an_admin_key_sees_the_failed_jobs_with_their_errors_escaped(
    console_site: ConsoleSite, seeded: dict[str, int]
) -> None:
    with signed_in_client(console_site, console_site.keys["admin"]) as client:
        page = _get(client)
    assert 'id="failed-jobs"' in page
    assert 'id="failed-jobs-hidden"' not in page
    assert "<b>bad</b>" not in page  # error text is data
    assert "extractor crashed: &lt;b&gt;bad&lt;/b&gt; &amp; worse" in page
    row = _text(page.split('id="failed-jobs"', 1)[1].split("</table>", 1)[0])
    assert f"#{seeded['job']}" in row and "extract_facts" in row and "1 of 1" in row
    assert "UTC" in row  # when it failed


def test_the_period_is_7_30_or_90_days(console_site: ConsoleSite, seeded: dict[str, int]) -> None:
    with signed_in_client(console_site, console_site.keys["read"]) as client:
        default = _get(client)
        assert re.search(r'href="/ui/t/console/\?days=30" aria-current="true"', default)
        for days in (7, 90):
            page = _get(client, f"{PAGE}?days={days}")
            assert re.search(rf'href="/ui/t/console/\?days={days}" aria-current="true"', page)
            growth = page.split('id="growth-table"', 1)[1].split("</table>", 1)[0]
            assert growth.count('<th scope="row">') == days
            assert f"GET /usage?days={days}" in page
        for bad in ("5", "abc", "-7", "365"):
            refused = client.get(PAGE, params={"days": bad})
            assert refused.status_code == 422, bad
            assert "days: choose one of 7, 30, 90" in html.unescape(refused.text)


def test_growth_counts_todays_additions_and_the_running_total(
    console_site: ConsoleSite, seeded: dict[str, int]
) -> None:
    with signed_in_client(console_site, console_site.keys["read"]) as client:
        page = _get(client, f"{PAGE}?days=7")
    rows = page.split('id="growth-table"', 1)[1].split("</tbody>", 1)[0].split("<tr>")
    today = _text(rows[2])  # newest first, after the header row
    memories, facts = seeded["memories"], seeded["facts"]
    assert today.split()[1:] == [str(memories), str(facts), str(memories), str(facts)]
    assert _text(rows[-1]).split()[1:] == ["0", "0", "0", "0"]  # a week ago: nothing yet


def test_with_prices_set_the_page_shows_the_cost(
    settings: Settings, elephant: Elephant, seeded: dict[str, int]
) -> None:
    priced = make_settings(
        settings.data_dir,
        embedded={"database": settings.embedded.database},
        auth={"mode": "local"},
        metrics={"llm_price_in_per_mtok": 3.0, "llm_price_out_per_mtok": 15.0},
    )
    runtime = Elephant(settings=priced, db=elephant.db, embedder=elephant.embedder, llm=None)
    with (
        serve_in_thread(create_app(priced, runtime)) as url,
        httpx.Client(base_url=url, timeout=30) as client,
    ):
        page = _get(client)
        empty = _get(client, "/ui/t/nobody-here/")
    text = _text(page)
    # (4500 * 3 + 1000 * 15) / 1e6 = 0.0285; by operation 0.0075 and 0.018
    assert "cost $0.0285 at $3 in / $15 out per million tokens" in text
    table = _text(page.split('id="usage-by-operation"', 1)[1].split("</table>", 1)[0])
    assert "extract_facts 2 1 2,000 300" in table and "$0.0105" in table
    assert "reflect 1 0 2,500 700" in table and "$0.0180" in table
    assert COST_NOT_CONFIGURED not in text
    # a tenant with nothing: every section says so instead of failing
    quiet = _text(empty)
    assert "No LLM calls in the last 30 days" in quiet and "offline" in quiet
    assert "No failed jobs." in quiet and "No gate decisions yet." in quiet
    drawn_empty = re.findall(r'<text class="empty"[^>]*>([^<]*)</text>', empty)
    assert drawn_empty == ["No LLM calls in this period"] * 2  # growth: 30 days of zeros


def test_in_a_browser_the_overview_draws_its_charts_and_hides_job_errors_from_readers(
    chromium: Any, console_site: ConsoleSite, seeded: dict[str, int]
) -> None:
    from selenium.webdriver.common.by import By

    requests_made(chromium)  # forget earlier pages
    sign_in(chromium, console_site, console_site.keys["admin"])
    chromium.get(f"{console_site.url}{PAGE}")
    wait_for(chromium, "svg#chart-stored")
    labels = [
        svg.get_attribute("aria-label")
        for svg in chromium.find_elements(By.CSS_SELECTOR, "svg.chart[role=img]")
    ]
    assert [label.split(".")[0] for label in labels] == [
        "Memories and facts stored, by day",
        "Memories and facts added per day",
        "LLM tokens (in + out) per day, by operation",
        "LLM tokens by operation",
    ]
    stored = chromium.find_element(By.ID, "chart-stored")
    assert len(stored.find_elements(By.CSS_SELECTOR, "path.line")) == 2
    assert len(stored.find_elements(By.CSS_SELECTOR, "circle.point")) == 60  # 30 days x 2
    by_day = chromium.find_element(By.ID, "chart-usage-day")
    assert len(by_day.find_elements(By.CSS_SELECTOR, "rect.bar")) == 2  # today, two operations
    by_operation = chromium.find_element(By.ID, "chart-usage-operation")
    assert len(by_operation.find_elements(By.CSS_SELECTOR, "rect.bar")) == 4  # in/out x 2
    assert stored.size["width"] > 300  # laid out, not collapsed
    operations = [
        th.text for th in chromium.find_elements(By.CSS_SELECTOR, "#usage-by-operation tbody th")
    ]
    assert operations == ["extract_facts", "reflect"]
    assert "extractor crashed" in wait_for(chromium, "#failed-jobs").text
    # the period links are plain links, reachable by keyboard
    link = chromium.find_element(By.CSS_SELECTOR, "nav.period a[href$='days=7']")
    link.click()
    wait_for(chromium, "nav.period a[aria-current=true][href$='days=7']")
    assert len(chromium.find_elements(By.CSS_SELECTOR, "#chart-stored circle.point")) == 14
    chromium.find_element(By.CSS_SELECTOR, "nav.period a[href$='days=30']").click()
    wait_for(chromium, "nav.period a[aria-current=true][href$='days=30']")
    screenshot(chromium, "overview-admin")
    chromium.find_element(By.ID, "queue-heading").location_once_scrolled_into_view  # noqa: B018
    screenshot(chromium, "overview-admin-jobs")

    sign_in(chromium, console_site, console_site.keys["read"])
    chromium.get(f"{console_site.url}{PAGE}")
    assert "admin scope" in wait_for(chromium, "#failed-jobs-hidden").text
    assert chromium.find_elements(By.ID, "failed-jobs") == []
    assert "extractor crashed" not in chromium.page_source
    chromium.find_element(By.CSS_SELECTOR, "#usage-heading").location_once_scrolled_into_view  # noqa: B018
    screenshot(chromium, "overview-read-usage")
    assert foreign_requests(chromium, console_site) == []
