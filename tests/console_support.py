"""Driving the web console in tests: a real server, Debian's chromium, signed-in clients.

The browser is Debian's ``chromium`` with ``chromium-driver`` (``make test`` installs
both); selenium is pointed at them, so it never downloads a driver. The browser
cannot resolve any name but 127.0.0.1, and every request it made can be listed
(``requests_made``), so a page that reached for a CDN fails its test. Screenshots go
to build/test-artifacts/console/ (ELEPHANT_TEST_ARTIFACTS), never into git.
"""

from __future__ import annotations

import html
import os
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = Path(os.environ.get("ELEPHANT_TEST_ARTIFACTS", ROOT / "build" / "test-artifacts"))
CHROMIUM = os.environ.get("ELEPHANT_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("ELEPHANT_TEST_CHROMEDRIVER", "/usr/bin/chromedriver")
WAIT_S = 30.0  # any single wait for the page; a loaded 2-core machine is slow, not stuck
CSRF_INPUT = re.compile(r'name="csrf" value="([0-9a-f]+)"')


@dataclass
class ConsoleSite:
    """A real API server with the console, and keys of one tenant by scope set."""

    url: str
    tenant: str
    keys: dict[str, str] = field(default_factory=dict)  # "read", "write", "admin" -> key


def start_browser() -> Any:
    """Headless chromium through chromium-driver, or a failure that says how to get them."""
    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        if os.environ.get("ELEPHANT_TEST_BROWSER") == "skip":
            pytest.skip("no chromium (ELEPHANT_TEST_BROWSER=skip)")
        pytest.fail(
            f"{CHROMIUM} or {CHROMEDRIVER} is missing: `make test` installs Debian's chromium "
            "and chromium-driver (apt-get); ELEPHANT_TEST_BROWSER=skip skips browser tests"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",  # tests may run as root
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,1000",
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(WAIT_S)
    return driver


def wait_for(driver: Any, css: str, timeout: float = WAIT_S) -> Any:
    """The first element matching ``css`` once it is visible (fails after ``timeout``)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, timeout).until(
            expected_conditions.visibility_of_element_located((By.CSS_SELECTOR, css))
        )
    except Exception as exc:  # TimeoutException: say what was on screen instead
        title = driver.title
        body = driver.find_element(By.TAG_NAME, "body").text[:500]
        raise AssertionError(
            f"{css!r} not visible within {timeout} s on {driver.current_url} ({title!r}): {body!r}"
        ) from exc


def sign_in(driver: Any, site: ConsoleSite, key: str) -> None:
    """Sign in through the form, as a person would; lands on the tenant's overview."""
    driver.delete_all_cookies()
    driver.get(f"{site.url}/ui/login")
    field_ = wait_for(driver, "input#key")
    field_.send_keys(key)
    field_.submit()
    wait_for(driver, "nav.main-nav")


def screenshot(driver: Any, name: str) -> Path:
    """Save the page as build/test-artifacts/console/<name>.png (a test artifact)."""
    target = ARTIFACTS / "console" / f"{name}.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(target))
    return target


def requests_made(driver: Any) -> list[str]:
    """URLs the browser requested since the last call (Chrome's performance log)."""
    import json

    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def foreign_requests(driver: Any, site: ConsoleSite) -> list[str]:
    """Requests to anywhere but the server under test (data: URLs are inline)."""
    return [
        url
        for url in requests_made(driver)
        if not url.startswith(site.url + "/") and not url.startswith("data:")
    ]


@contextmanager
def signed_in_client(site: ConsoleSite, key: str) -> Iterator[httpx.Client]:
    """An HTTP client holding a console session (no browser), for status and form checks."""
    with httpx.Client(base_url=site.url, timeout=WAIT_S, follow_redirects=False) as client:
        answer = client.post("/ui/login", data={"key": key, "next": "/ui/"})
        assert answer.status_code == 303, answer.text[:500]
        assert "elephant_session" in client.cookies, answer.headers
        yield client


def csrf_of(client: httpx.Client, path: str) -> str:
    """The CSRF token the forms of a console page carry."""
    page = client.get(path)
    assert page.status_code == 200, page.text[:500]
    found = CSRF_INPUT.search(page.text)
    assert found is not None, f"no CSRF input on {path}"
    return found.group(1)


def follow(driver: Any, action: Callable[[], None], css: str) -> Any:
    """Do ``action`` (a click that loads a page) and wait for the new page's ``css``: the
    old page must be gone first, or an element of the same id on it would answer."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    old = driver.find_element(By.TAG_NAME, "html")
    action()

    def gone(_: Any) -> bool:
        # Stale, or (chromium, mid-navigation) "unhandled inspector error: node does not
        # belong to the document": either way the old page is no longer there.
        try:
            old.is_enabled()
        except WebDriverException:
            return True
        return False

    WebDriverWait(driver, WAIT_S).until(gone)
    return wait_for(driver, css)


def text_of(page: str) -> str:
    """The page's text, tags dropped and entities decoded (for assertions on words)."""
    return html.unescape(re.sub(r"<[^>]+>", " ", page))
