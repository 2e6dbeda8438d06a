"""The console's 429 pages say when to retry, as the API's 429s do: a ``Retry-After``
header on the page of a key over its per-minute budget and on the sign-in form refused
for too many failed sign-ins (both were without one).

Over HTTP (Litestar's TestClient), no browser: the header is what is checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from app.api import create_app
from app.config import Settings
from app.db import Database
from app.providers.embedder import Embedder
from app.services.access.keys import KeyIn, create_key
from app.services.runtime import Elephant
from tests.conftest import make_settings

Client = TestClient  # type: ignore[type-arg]
TENANT = "console-limits"
READS_PER_MINUTE = 3
DENIED_PER_MINUTE = 2


@pytest.fixture(scope="module")
def client(settings: Settings, db: Database, embedder: Embedder) -> Iterator[Client]:
    served = make_settings(
        settings.data_dir,
        embedded={"database": settings.embedded.database},
        auth={
            "rate_read_per_minute": READS_PER_MINUTE,
            "rate_denied_per_minute": DENIED_PER_MINUTE,
        },
    )
    runtime = Elephant(settings=served, db=db, embedder=embedder, llm=None)
    app = create_app(served, runtime)
    with TestClient(app=app, base_url="http://127.0.0.1:7777") as test_client:
        yield test_client


def retry_after(response: Any) -> int:
    value = response.headers.get("retry-after")
    assert value is not None, f"no Retry-After on {response}"
    return int(value)


def test_a_console_page_over_the_keys_budget_says_when_to_retry(
    client: Client, db: Database
) -> None:
    key = create_key(db, KeyIn(tenant=TENANT, scopes=["read"], name="console reader")).key
    signed_in = client.post("/ui/login", data={"key": key, "next": "/ui/"}, follow_redirects=False)
    assert signed_in.status_code == 303, signed_in.text
    answers = [client.get(f"/ui/t/{TENANT}/") for _ in range(READS_PER_MINUTE + 2)]
    assert answers[0].status_code == 200, answers[0].text
    limited = answers[-1]
    assert limited.status_code == 429, [answer.status_code for answer in answers]
    assert limited.headers["content-type"].startswith("text/html")
    assert "retry in" in limited.text
    assert 1 <= retry_after(limited) <= 60


def test_the_sign_in_form_refused_for_failures_says_when_to_retry(client: Client) -> None:
    client.cookies.clear()
    answers = [
        client.post("/ui/login", data={"key": "ek_000000000000_nope", "next": "/ui/"})
        for _ in range(DENIED_PER_MINUTE + 2)
    ]
    assert answers[0].status_code == 401, answers[0].text
    limited = answers[-1]
    assert limited.status_code == 429, [answer.status_code for answer in answers]
    assert 1 <= retry_after(limited) <= 60
