"""The console's Gate page: counts, the threshold, decisions with their scores and reasons,
and force-admitting a rejected note (write scope, CSRF, once).

Against a real server (console_site) over this module's database; notes go through the
real commit path with the offline gate scorer.
"""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from app.services.memory.commit import commit_note
from app.services.memory.schemas import NoteIn
from app.services.runtime import Elephant
from tests.console_support import (
    ConsoleSite,
    csrf_of,
    follow,
    foreign_requests,
    requests_made,
    screenshot,
    sign_in,
    signed_in_client,
    text_of,
    wait_for,
)

KEPT = "Priya's flight to Lima leaves on 14 March 2027 from gate B12"


def reject(elephant: Elephant, tenant: str, text: str, source: str = "chat") -> int:
    """Commit a note the offline gate refuses; the id of its decision."""
    result = commit_note(elephant, tenant, NoteIn(text=text, source=source))
    assert result.status == "rejected", result
    with elephant.db.tenant(tenant) as conn:
        row = conn.execute(
            "SELECT id FROM admission_log WHERE decision = 'rejected' ORDER BY id DESC LIMIT 1"
        ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture(scope="module")
def kept(console_site: ConsoleSite, elephant: Elephant) -> str:
    result = commit_note(elephant, console_site.tenant, NoteIn(text=KEPT), wait=True)
    assert result.status == "stored" and result.memory_id
    return result.memory_id


def test_counts_threshold_scores_and_no_admit_button_for_a_read_key(
    console_site: ConsoleSite, elephant: Elephant, kept: str
) -> None:
    decision = reject(elephant, console_site.tenant, "ok thanks")
    base = f"/ui/t/{console_site.tenant}"
    with signed_in_client(console_site, console_site.keys["read"]) as client:
        page = client.get(f"{base}/gate")
        assert page.status_code == 200
        assert 'aria-current="page">Gate<' in page.text
        assert re.search(r'id="threshold">4\.00<', page.text)
        assert re.search(r'id="count-rejected">[1-9]\d*<', page.text)
        assert re.search(r'id="count-accepted">[1-9]\d*<', page.text)
        article = page.text[page.text.index(f'id="decision-{decision}"') :]
        article = article[: article.index("</article>")]
        words = text_of(article)
        assert "rejected" in words and "ok thanks" in words and "Scorer: offline" in words
        for score in ("Relevance", "Novelty", "Specificity", "Composite"):
            assert score in words
        assert article.count("<meter") == 4 and 'low="4.0"' in article
        assert "a key with write scope can admit it" in words
        assert "/admit" not in page.text  # no form for a read key
        assert f'href="{base}/memories/{kept}"' in page.text  # the accepted note's memory

        token = csrf_of(client, f"{base}/gate")
        refused = client.post(f"{base}/gate/{decision}/admit", data={"csrf": token})
        assert refused.status_code == 403

        only = client.get(f"{base}/gate", params={"decision": "rejected"})
        assert "accepted</span>" not in only.text and f'id="decision-{decision}"' in only.text
        assert client.get(f"{base}/gate", params={"decision": "maybe"}).status_code == 422
        assert client.get(f"{base}/gate", params={"cursor": "x"}).status_code == 422


def test_admit_needs_the_csrf_token_and_works_once(
    console_site: ConsoleSite, elephant: Elephant
) -> None:
    decision = reject(elephant, console_site.tenant, "cool cool", source="slack")
    base = f"/ui/t/{console_site.tenant}"
    with signed_in_client(console_site, console_site.keys["write"]) as client:
        page = client.get(f"{base}/gate")
        assert f'action="{base}/gate/{decision}/admit"' in page.text
        assert client.post(f"{base}/gate/{decision}/admit").status_code == 403  # no token
        token = csrf_of(client, f"{base}/gate")
        answer = client.post(f"{base}/gate/{decision}/admit", data={"csrf": token})
        assert answer.status_code == 303
        location = answer.headers["location"]
        assert location.startswith(f"{base}/gate?admitted={decision}&memory=")
        assert "outcome=stored" in location
        shown = client.get(location)
        assert "stored as a new memory" in text_of(shown.text)
        memory = re.search(r'/memories/([0-9a-f-]{36})" id="admitted-memory"', shown.text)
        assert memory is not None
        stored = client.get(f"{base}/memories/{memory.group(1)}")
        words = text_of(stored.text)
        assert "cool cool" in words and "slack" in words
        assert f"admitted from rejected decision {decision}" in words and "forced" in words

        twice = client.post(f"{base}/gate/{decision}/admit", data={"csrf": token})
        assert twice.status_code == 409 and "admitted already" in twice.text
        missing = client.post(f"{base}/gate/99999999/admit", data={"csrf": token})
        assert missing.status_code == 404
        with elephant.db.tenant(console_site.tenant) as conn:
            row = conn.execute(
                "SELECT id FROM admission_log WHERE decision = 'accepted' LIMIT 1"
            ).fetchone()
        assert row is not None
        wrong = client.post(f"{base}/gate/{row[0]}/admit", data={"csrf": token})
        assert wrong.status_code == 422 and "not rejected" in html.unescape(wrong.text)


def test_force_admit_in_the_browser(
    chromium: Any, console_site: ConsoleSite, elephant: Elephant, kept: str
) -> None:
    from selenium.webdriver.common.by import By

    decision = reject(elephant, console_site.tenant, "ok thanks!!")
    base = f"{console_site.url}/ui/t/{console_site.tenant}"

    sign_in(chromium, console_site, console_site.keys["read"])
    requests_made(chromium)
    chromium.get(f"{base}/gate?decision=rejected")
    article = wait_for(chromium, f"#decision-{decision}")
    assert "ok thanks!!" in article.text and "Reason:" in article.text
    assert not article.find_elements(By.CSS_SELECTOR, "form.admit button")
    screenshot(chromium, "gate-read-key")
    assert foreign_requests(chromium, console_site) == []

    sign_in(chromium, console_site, console_site.keys["write"])
    requests_made(chromium)
    chromium.get(f"{base}/gate")
    wait_for(chromium, "#gate-counts")
    select = chromium.find_element(By.ID, "f-decision")
    assert chromium.find_element(By.CSS_SELECTOR, "label[for='f-decision']")
    select.send_keys("rejected")
    submit = chromium.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]")
    article = follow(chromium, submit.click, f"#decision-{decision}")
    assert "decision=rejected" in chromium.current_url
    meters = article.find_elements(By.TAG_NAME, "meter")
    assert len(meters) == 4
    composite = float(meters[3].get_attribute("value"))
    assert composite < float(meters[3].get_attribute("low")) == 4.0
    assert "composite" in article.find_element(By.TAG_NAME, "caption").text
    screenshot(chromium, "gate-rejected")

    button = article.find_element(By.CSS_SELECTOR, "form.admit button")
    assert button.get_attribute("aria-label") == f"Admit rejected note #{decision} as a memory"
    notice = follow(chromium, button.click, "#admitted")
    assert f"Rejected decision #{decision} admitted" in notice.text
    assert "stored as a new memory" in notice.text
    screenshot(chromium, "gate-admitted")
    admitted = chromium.find_element(By.CSS_SELECTOR, f"#decision-{decision}")
    assert not admitted.find_elements(By.CSS_SELECTOR, "form.admit")
    assert "admitted already" in admitted.text

    follow(chromium, chromium.find_element(By.ID, "admitted-memory").click, "#memory-text")
    assert chromium.find_element(By.ID, "memory-text").text == "ok thanks!!"
    decisions = chromium.find_element(By.ID, "memory-decisions").text
    assert "forced" in decisions and f"admitted from rejected decision {decision}" in decisions
    screenshot(chromium, "gate-admitted-memory")
    assert foreign_requests(chromium, console_site) == []
