"""Failed secrets never lock out the right secret (issue 40, item 6 of the attack): a
guesser behind the victim's own address, who knows the victim's key prefix (it is not a
secret), sends wrong secrets on it, on REST, MCP over HTTP and the console's sign-in;
the victim's calls with the right secret all succeed, on a real uvicorn on 127.0.0.1.
And the client's address is read from X-Forwarded-For only when the peer is a trusted
proxy (``auth.trusted_proxies``). Budget: 5 failures a minute (the address's cap 50)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator

import httpx
import pytest

from app.api import create_app
from app.config import Settings
from app.db import Database
from app.mcp.http import standalone_app
from app.services.access import audit
from app.services.access.keys import KeyIn, create_key
from app.services.runtime import Elephant
from app.web.access_log import ACCESS_LOGGER
from app.web.failed_auth import ADDRESS_FACTOR
from tests.conftest import make_settings, serve_in_thread

BUDGET = 5
ACCEPT = {"Accept": "application/json, text/event-stream"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def served(settings: Settings, **auth: object) -> Settings:
    return make_settings(
        settings.data_dir,
        embedded={"database": settings.embedded.database},
        auth={"rate_denied_per_minute": BUDGET, **auth},
    )


@pytest.fixture(scope="module")
def limited(settings: Settings) -> Settings:
    return served(settings)


@pytest.fixture
def site(limited: Settings, elephant: Elephant) -> Iterator[str]:
    """A fresh API (a fresh budget) on a loopback port."""
    with serve_in_thread(create_app(limited, elephant)) as url:
        yield url


def new_key(db: Database, scopes: tuple[str, ...] = ("read", "write")) -> str:
    return create_key(db, KeyIn(tenant="secrets", scopes=list(scopes))).key


def wrong_secret(key: str) -> str:
    """The victim's prefix with a secret nobody holds."""
    return f"ek_{key.split('_')[1]}_{secrets.token_urlsafe(32)}"


def bearer(key: str, **headers: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", **headers}


def victim_calls(http: httpx.Client, url: str, key: str) -> list[int]:
    """A read and a write on REST, and an MCP session opened, with the right key (a
    repeated note is answered 200 as a duplicate, 201 the first time)."""
    read = http.get(f"{url}/stats", headers=bearer(key))
    write = http.post(
        f"{url}/commit",
        json={"text": "Ines keeps the spare key under the blue pot", "force": True},
        headers=bearer(key),
    )
    mcp = http.post(f"{url}/mcp", json=INIT, headers=bearer(key, **ACCEPT))
    return [
        read.status_code,
        200 if write.status_code == 201 else write.status_code,
        mcp.status_code,
    ]


def guess(http: httpx.Client, url: str, key: str, door: int) -> int:
    if door % 2:
        return http.post(f"{url}/mcp", json=INIT, headers=bearer(key, **ACCEPT)).status_code
    return http.get(f"{url}/stats", headers=bearer(key)).status_code


def test_quick_guesses_on_the_victims_prefix_never_refuse_the_victim(
    site: str, db: Database
) -> None:
    """30 wrong secrets in a burst, REST and MCP, from the victim's own address, with the
    victim's calls between them: every one of the victim's calls succeeds."""
    victim = new_key(db)
    with httpx.Client(timeout=10) as http:
        assert victim_calls(http, site, victim) == [200, 200, 200]
        answers, victims = [], []
        for n in range(30):
            answers.append(guess(http, site, wrong_secret(victim), n))
            if n % 3 == 2:
                victims += victim_calls(http, site, victim)
    assert victims == [200, 200, 200] * 10
    assert answers == [401] * BUDGET + [429] * (30 - BUDGET), "the guesser is still limited"


def test_guesses_before_the_victims_first_call_do_not_hold_it(site: str, db: Database) -> None:
    """A key this process has not seen verify yet (just after a restart): 30 wrong secrets
    on its prefix first, then its first calls, on both doors."""
    victim = new_key(db)
    with httpx.Client(timeout=10) as http:
        answers = [guess(http, site, wrong_secret(victim), n) for n in range(30)]
        assert victim_calls(http, site, victim) == [200, 200, 200]
        after = [guess(http, site, wrong_secret(victim), n) for n in range(BUDGET + 1)]
    assert set(answers) == {401}, "unknown prefixes: looked up, within the address's cap"
    assert after == [401] * BUDGET + [429], "once it verified, wrong secrets cost no lookup"


def test_one_guess_a_second_for_20_calls(site: str, db: Database) -> None:
    """The issue's pace (it made 11 of 20 calls fail): a guess, then a victim's call,
    every 0.5 s on average, for 20 calls; with the budget at 5 a minute."""
    victim = new_key(db, ("read",))
    results = []
    with httpx.Client(timeout=10) as http:
        for n in range(20):
            guess(http, site, wrong_secret(victim), n)
            results.append(http.get(f"{site}/stats", headers=bearer(victim)).status_code)
            time.sleep(0.5)
    assert results == [200] * 20


def test_elephant_mcp_http_never_refuses_the_right_key(
    limited: Settings, elephant: Elephant
) -> None:
    victim = new_key(elephant.db)
    with (
        serve_in_thread(standalone_app(limited, lambda: elephant)) as url,
        httpx.Client(timeout=10) as http,
    ):
        opened = []
        for _ in range(3 * BUDGET):
            http.post(f"{url}/mcp", json=INIT, headers=bearer(wrong_secret(victim), **ACCEPT))
            answer = http.post(f"{url}/mcp", json=INIT, headers=bearer(victim, **ACCEPT))
            opened.append(answer.status_code)
    assert opened == [200] * (3 * BUDGET)


def test_wrong_secrets_across_known_prefixes_are_capped_per_address(
    site: str, db: Database
) -> None:
    """Wrong secrets cost no lookup, but each 401 is an audit row: across the prefixes it
    knows, one address gets ADDRESS_FACTOR x the budget (50) of them a minute, then 429;
    the right secrets still pass."""
    keys = [new_key(db, ("read",)) for _ in range(2 * ADDRESS_FACTOR + 1)]
    with httpx.Client(timeout=10) as http:
        for key in keys:
            assert http.get(f"{site}/stats", headers=bearer(key)).status_code == 200
        answers = [
            http.get(f"{site}/stats", headers=bearer(wrong_secret(key))).status_code
            for key in keys
            for _ in range(BUDGET - 2)  # 63 in all, under each prefix's own budget
        ]
        capped = http.get(f"{site}/stats", headers=bearer(wrong_secret(keys[-1])))
        right = [http.get(f"{site}/stats", headers=bearer(key)).status_code for key in keys]
    cap = BUDGET * ADDRESS_FACTOR  # (and what refills meanwhile, under 1 a second)
    assert cap <= answers.count(401) < cap + 10 and answers[-1] == 429, answers
    assert capped.status_code == 429 and "wrong secrets" in capped.json()["message"]
    assert right == [200] * len(keys)


# ------------------------------------------------------------------ the console's sign-in


def sign_in(http: httpx.Client, url: str, key: str, **headers: str) -> int:
    form = {"key": key, "next": "/ui/"}
    return http.post(f"{url}/ui/login", data=form, headers=headers).status_code


def test_a_guesser_behind_the_same_address_does_not_block_the_consoles_sign_in(
    site: str, db: Database
) -> None:
    """Wrong keys (malformed, random prefixes, the victim's prefix) from one address until
    they get 429; the victim's sign-in from that address, first and later, succeeds."""
    victim = new_key(db, ("read",))
    with httpx.Client(timeout=10, follow_redirects=False) as http:
        garbage = [sign_in(http, site, "not a key") for _ in range(BUDGET + 1)]
        assert garbage == [401] * BUDGET + [429]
        random = [sign_in(http, site, f"ek_{secrets.token_hex(6)}_{'x' * 40}") for _ in range(8)]
        assert set(random) == {401}
        assert sign_in(http, site, victim) == 303
        aimed = [sign_in(http, site, wrong_secret(victim)) for _ in range(BUDGET + 2)]
        assert aimed == [401] * BUDGET + [429] * 2
        http.cookies.clear()
        assert sign_in(http, site, victim) == 303
        # REST's guesses on the victim's prefix spend the same budget, and hold nothing
        assert http.get(f"{site}/stats", headers=bearer(wrong_secret(victim))).status_code == 429
        http.cookies.clear()
        assert sign_in(http, site, victim) == 303


# ------------------------------------------------------------------ trusted proxies


def denied_clients(db: Database, action: str, since: int) -> list[str | None]:
    rows = [
        entry
        for entry in audit.entries(db, tenant=None, limit=1000)
        if entry.outcome == "denied" and entry.action == action and entry.id > since
    ]
    return [entry.client for entry in rows]


def last_audit_id(db: Database) -> int:
    entries = audit.entries(db, tenant=None, limit=1)
    return entries[0].id if entries else 0


def spend(http: httpx.Client, url: str, forwarded_for: str) -> list[int]:
    """Malformed keys (one budget per address) from a client the proxy names."""
    headers = bearer("not-a-key", **{"X-Forwarded-For": forwarded_for})
    return [http.get(f"{url}/stats", headers=headers).status_code for _ in range(BUDGET + 1)]


def test_x_forwarded_for_is_the_client_only_from_a_trusted_proxy(
    settings: Settings, elephant: Elephant, db: Database
) -> None:
    trusting = served(settings, trusted_proxies="127.0.0.1, 10.0.0.0/8")
    since = last_audit_id(db)
    with serve_in_thread(create_app(trusting, elephant)) as url, httpx.Client(timeout=10) as http:
        # the right-most address that is not a trusted proxy is the client
        assert spend(http, url, "198.51.100.9, 203.0.113.7, 10.1.2.3") == [401] * BUDGET + [429]
        assert spend(http, url, "203.0.113.8") == [401] * BUDGET + [429]  # another client
        assert sign_in(http, url, "nope", **{"X-Forwarded-For": "203.0.113.9"}) == 401
        mcp = bearer("not-a-key", **ACCEPT, **{"X-Forwarded-For": "203.0.113.10"})
        assert http.post(f"{url}/mcp", json=INIT, headers=mcp).status_code == 401
    assert (
        denied_clients(db, "GET /stats", since)
        == ["203.0.113.8"] * BUDGET + ["203.0.113.7"] * BUDGET
    )
    assert denied_clients(db, "POST /ui/login", since) == ["203.0.113.9"]
    assert denied_clients(db, "POST /mcp", since) == ["203.0.113.10"]


def test_x_forwarded_for_from_an_untrusted_peer_is_ignored(
    settings: Settings, elephant: Elephant, db: Database
) -> None:
    """With no trusted proxy, a client cannot pick its address (a fresh budget per
    try, a forged audit trail) by sending the header; on MCP over HTTP neither."""
    untrusting = served(settings, trusted_proxies="")
    since = last_audit_id(db)
    with serve_in_thread(create_app(untrusting, elephant)) as url, httpx.Client(timeout=10) as http:
        assert spend(http, url, "203.0.113.7") == [401] * BUDGET + [429]
        assert spend(http, url, "203.0.113.8") == [429] * (BUDGET + 1)
    assert set(denied_clients(db, "GET /stats", since)) == {"127.0.0.1"}
    with serve_in_thread(standalone_app(untrusting, lambda: elephant)) as url:
        headers = bearer("not-a-key", **ACCEPT, **{"X-Forwarded-For": "203.0.113.7"})
        answer = httpx.post(f"{url}/mcp", json=INIT, headers=headers, timeout=10)
    assert answer.status_code == 401
    assert set(denied_clients(db, "POST /mcp", since)) == {"127.0.0.1"}


def test_mcp_over_http_logs_the_client_a_trusted_proxy_names(
    settings: Settings, elephant: Elephant, caplog: pytest.LogCaptureFixture
) -> None:
    """`elephant mcp --http`'s access line (log.access_detail) names the client behind a
    trusted proxy, as the gate's audit row does, not the proxy's address."""
    trusting = make_settings(
        settings.data_dir,
        embedded={"database": settings.embedded.database},
        auth={"rate_denied_per_minute": BUDGET, "trusted_proxies": "127.0.0.1"},
        log={"access_detail": True},
    )
    app = standalone_app(trusting, lambda: elephant, log_access=True)
    with caplog.at_level("INFO", logger=ACCESS_LOGGER), serve_in_thread(app) as url:
        headers = bearer("not-a-key", **ACCEPT, **{"X-Forwarded-For": "203.0.113.21"})
        answer = httpx.post(f"{url}/mcp", json=INIT, headers=headers, timeout=10)
    assert answer.status_code == 401
    lines = [r.getMessage() for r in caplog.records if r.name == ACCESS_LOGGER]
    assert any(line.startswith("POST /mcp 401") for line in lines), lines
    assert all("from 203.0.113.21:" in line for line in lines if "/mcp" in line), lines
