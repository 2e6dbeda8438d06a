"""Who may see the web console, and how: sign-in, the session cookie, CSRF, tenants.

Against a real server on 127.0.0.1 in keys mode (and one in local mode), over HTTP
and in Debian's chromium.
"""

from __future__ import annotations

import html
import re
from typing import Any

import httpx

from app.api import create_app
from app.config import Settings
from app.services.access.keys import revoke_key
from app.services.runtime import Elephant
from app.web.route_access import route_access
from tests.conftest import make_settings, serve_in_thread
from tests.console_support import (
    ConsoleSite,
    csrf_of,
    foreign_requests,
    requests_made,
    screenshot,
    sign_in,
    signed_in_client,
    wait_for,
)

GHOST = "00000000-0000-4000-8000-000000000000"  # an id no row has


def _client(site: ConsoleSite) -> httpx.Client:
    return httpx.Client(base_url=site.url, timeout=30, follow_redirects=False)


def test_a_page_without_a_session_goes_to_the_sign_in_form_and_back(
    console_site: ConsoleSite,
) -> None:
    with _client(console_site) as client:
        answer = client.get("/ui/t/console/gate?decision=rejected")
        assert answer.status_code == 303
        assert answer.headers["location"] == (
            "/ui/login?next=%2Fui%2Ft%2Fconsole%2Fgate%3Fdecision%3Drejected"
        )
        form = client.get(answer.headers["location"])
        assert form.status_code == 200
        assert 'name="next" value="/ui/t/console/gate?decision=rejected"' in form.text
        # a bearer key is not a console session; a form post without one is refused
        assert (
            client.get(
                "/ui/t/console/", headers={"Authorization": f"Bearer {console_site.keys['read']}"}
            ).status_code
            == 303
        )
        assert client.post("/ui/logout", data={"csrf": "x"}).status_code == 401


def test_a_wrong_key_is_refused_on_the_form_and_sets_no_cookie(console_site: ConsoleSite) -> None:
    with _client(console_site) as client:
        answer = client.post("/ui/login", data={"key": "ek_nothere1_" + "x" * 40, "next": ""})
        assert answer.status_code == 401
        assert "invalid API key" in answer.text
        assert 'role="alert"' in answer.text
        assert "set-cookie" not in answer.headers
        assert client.post("/ui/login", data={"key": "", "next": ""}).status_code == 401


def test_signing_in_sets_a_strict_http_only_session_cookie_and_never_the_key(
    console_site: ConsoleSite,
) -> None:
    key = console_site.keys["read"]
    with _client(console_site) as client:
        answer = client.post("/ui/login", data={"key": key, "next": "/ui/t/console/facts"})
        assert answer.status_code == 303
        assert answer.headers["location"] == "/ui/t/console/facts"
        cookie = answer.headers["set-cookie"]
        attributes = {part.strip().split("=")[0].lower() for part in cookie.split(";")}
        assert {"httponly", "samesite", "path", "max-age"} <= attributes
        assert "SameSite=Strict" in cookie or "samesite=strict" in cookie.lower()
        assert "Path=/ui" in cookie
        assert "secure" not in attributes  # plain http on loopback; https would add it
        secret = key.split("_", 2)[2]  # the secret itself may begin with "_"
        assert secret and key not in cookie and secret not in cookie
        page = client.get("/ui/t/console/")
        assert page.status_code == 200
        headers = page.headers
        assert "default-src 'none'" in headers["content-security-policy"]
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["x-frame-options"] == "DENY"
        assert headers["cache-control"] == "no-store"
        # the cookie opens console pages only: the JSON API still wants a bearer key
        assert client.get("/stats", headers={"X-Elephant-Tenant": "console"}).status_code == 401


def test_the_next_page_is_never_another_site(console_site: ConsoleSite) -> None:
    key = console_site.keys["read"]
    with _client(console_site) as client:
        for target in ("//evil.example/x", "https://evil.example/", "/ui/\\evil", "/stats"):
            answer = client.post("/ui/login", data={"key": key, "next": target})
            assert answer.status_code == 303
            assert answer.headers["location"] == "/ui/", target


def test_a_tenant_key_sees_only_its_tenant_and_its_scopes(console_site: ConsoleSite) -> None:
    with signed_in_client(console_site, console_site.keys["read"]) as client:
        other = client.get("/ui/t/someone-else/")
        assert other.status_code == 403
        assert "may not act for tenant 'someone-else'" in html.unescape(other.text)
        assert other.headers["content-type"].startswith("text/html")
        assert client.get("/ui/t/console/erase").status_code == 403
        overview = client.get("/ui/t/console/")
        assert '/ui/t/console/erase"' not in overview.text  # not offered to a read key
        assert client.get("/ui/").headers["location"] == "/ui/t/console/"
        assert client.get("/ui/t/Bad%20Tenant/").status_code == 422


def test_forms_need_the_csrf_token_and_the_same_origin(console_site: ConsoleSite) -> None:
    with signed_in_client(console_site, console_site.keys["read"]) as client:
        token = csrf_of(client, "/ui/t/console/")
        refused = client.post("/ui/logout", data={"csrf": "0" * 64})
        assert refused.status_code == 403
        assert "CSRF" in refused.text
        assert client.post("/ui/logout").status_code == 403
        cross = client.post(
            "/ui/logout", data={"csrf": token}, headers={"Origin": "http://evil.example"}
        )
        assert cross.status_code == 403
        assert client.get("/ui/t/console/").status_code == 200  # still signed in
        out = client.post("/ui/logout", data={"csrf": token})
        assert out.status_code == 303
        assert out.headers["location"] == "/ui/login"
        assert client.get("/ui/t/console/").status_code == 303  # the session is gone


def test_signing_out_or_revoking_the_key_ends_the_session_on_the_server(
    console_site: ConsoleSite, elephant: Elephant
) -> None:
    with signed_in_client(console_site, console_site.keys["read"]) as client:
        stolen = dict(client.cookies)
        token = csrf_of(client, "/ui/t/console/")
        assert client.post("/ui/logout", data={"csrf": token}).status_code == 303
    with _client(console_site) as replay:
        replay.cookies.update(stolen)
        assert replay.get("/ui/t/console/").status_code == 303  # the old cookie is dead

    from app.services.access.keys import KeyIn, create_key

    doomed = create_key(elephant.db, KeyIn(tenant="console", scopes=["read"], name="doomed"))
    with signed_in_client(console_site, doomed.key) as client:
        assert client.get("/ui/t/console/").status_code == 200
        revoke_key(elephant.db, doomed.prefix, tenant="console")
        assert client.get("/ui/t/console/").status_code == 303


def test_local_mode_needs_no_sign_in_and_still_checks_csrf(
    settings: Settings, elephant: Elephant
) -> None:
    local = make_settings(
        settings.data_dir,
        embedded={"database": settings.embedded.database},
        auth={"mode": "local"},
    )
    with (
        serve_in_thread(create_app(local, elephant)) as url,
        httpx.Client(base_url=url, timeout=30) as client,
    ):
        assert client.get("/ui/login").headers["location"] == "/ui/"
        page = client.get("/ui/t/anyone/")
        assert page.status_code == 200
        assert "local mode" in page.text
        assert client.post("/ui/logout", data={"csrf": "nope"}).status_code == 403


def test_in_a_browser_signing_in_shows_the_console_and_fetches_nothing_elsewhere(
    chromium: Any, console_site: ConsoleSite
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    requests_made(chromium)  # forget earlier pages
    chromium.delete_all_cookies()
    chromium.get(f"{console_site.url}/ui/t/console/")
    wait_for(chromium, "input#key")
    assert "/ui/login?next=" in chromium.current_url
    label = chromium.find_element(By.CSS_SELECTOR, "label[for=key]")
    assert label.text == "API key"
    screenshot(chromium, "sign-in")

    chromium.find_element(By.ID, "key").send_keys("ek_wrongwrong_" + "y" * 40 + Keys.ENTER)
    assert "invalid API key" in wait_for(chromium, "#sign-in-error").text

    sign_in(chromium, console_site, console_site.keys["admin"])
    assert chromium.current_url.endswith("/ui/t/console/")
    assert wait_for(chromium, "#current-tenant").text == "console"
    labels = [a.text for a in chromium.find_elements(By.CSS_SELECTOR, "nav.main-nav a")]
    assert labels == [
        "Overview",
        "Search",
        "Memories",
        "Facts",
        "Gate",
        "Graph",
        "Conversations",
        "Erase",
    ]
    current = chromium.find_element(By.CSS_SELECTOR, "nav.main-nav a[aria-current=page]")
    assert current.text == "Overview"
    # keyboard: the first Tab reaches the skip link, which moves focus to the content
    body = chromium.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.TAB)
    focused = chromium.switch_to.active_element
    assert focused.text == "Skip to content"
    focused.send_keys(Keys.ENTER)
    assert chromium.switch_to.active_element.get_attribute("id") == "main"
    screenshot(chromium, "overview-signed-in")

    chromium.find_element(By.CSS_SELECTOR, "header form button").click()  # sign out
    wait_for(chromium, "input#key")
    assert foreign_requests(chromium, console_site) == []


def _console_routes(settings: Settings, elephant: Elephant) -> list[tuple[str, str, str]]:
    """(method, path with sample parameters, scope) of every signed-in console route."""
    samples = {"uuid": GHOST, "int": "999999999", "str": "nothing-here"}
    found = []
    for route in create_app(settings, elephant).routes:
        for handler in getattr(route, "route_handlers", []):
            access = route_access(handler)
            if access is None or not access.console or access.scope == "public":
                continue
            path = route.path.replace("{tenant_id:str}", "console")
            path = re.sub(r"\{\w+:(\w+)\}", lambda m: samples[m.group(1)], path)
            found.extend((method, path, access.scope) for method in handler.http_methods)
    return sorted(found)


def test_every_console_route_checks_the_session_and_the_scope(
    console_site: ConsoleSite, settings: Settings, elephant: Elephant
) -> None:
    routes = _console_routes(settings, elephant)
    assert ("GET", "/ui/t/console", "read") in routes and len(routes) >= 8
    rank = {"read": 0, "write": 1, "admin": 2}
    with _client(console_site) as anonymous:
        for method, path, _ in routes:
            expected = 303 if method == "GET" else 401
            assert anonymous.request(method, path).status_code == expected, (method, path)
    for holder in ("read", "write", "admin"):
        with signed_in_client(console_site, console_site.keys[holder]) as client:
            token = csrf_of(client, "/ui/t/console/")
            for method, path, needed in routes:
                if path == "/ui/logout":
                    continue
                data = {"csrf": token} if method != "GET" else None
                status = client.request(method, path, data=data).status_code
                if rank[holder] >= rank[needed]:
                    assert status not in (401, 403), (holder, method, path, status)
                else:
                    assert status == 403, (holder, method, path, status)


def test_behind_a_tls_proxy_the_cookie_is_secure_and_a_key_without_read_gets_no_session(
    console_site: ConsoleSite, elephant: Elephant
) -> None:
    from app.services.access.keys import KeyIn, create_key

    key = console_site.keys["read"]
    with _client(console_site) as client:
        # X-Forwarded-Proto is read from loopback (auth.trusted_proxies), as from a TLS proxy
        answer = client.post(
            "/ui/login",
            data={"key": key, "next": ""},
            headers={"X-Forwarded-Proto": "https"},
        )
        assert answer.status_code == 303
        assert "secure" in answer.headers["set-cookie"].lower()
    writer = create_key(elephant.db, KeyIn(tenant="console", scopes=["write"], name="w")).key
    with _client(console_site) as client:
        refused = client.post("/ui/login", data={"key": writer, "next": ""})
        assert refused.status_code == 403
        assert "needs a key with the 'read' scope" in html.unescape(refused.text)
        assert "set-cookie" not in refused.headers


def test_the_console_can_be_switched_off(settings: Settings, elephant: Elephant) -> None:
    off = make_settings(
        settings.data_dir,
        embedded={"database": settings.embedded.database},
        console={"enabled": False},
    )
    with (
        serve_in_thread(create_app(off, elephant)) as url,
        httpx.Client(base_url=url, timeout=30) as client,
    ):
        answer = client.get("/ui/login")
        assert answer.status_code == 404
        assert answer.json()["error"] == "not_found"
        assert client.get("/health").status_code in (200, 503)
