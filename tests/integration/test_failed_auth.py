"""The failed-auth budget (app/web/failed_auth.py), tried as a key guesser would: over MCP
as over REST, both doors spending one budget: wrong secrets of a key's prefix per address
and prefix (a guesser behind a shared address does not lock out the valid keys beside
it), lookups of prefixes never seen to verify per address (a guesser who draws a fresh
prefix per try). The API and `elephant mcp --http` run with a small budget (5 failures a
minute: the per-address cap is 50). tests/integration/test_failed_secrets.py: the right
secret is never refused."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from litestar.testing import TestClient

from app.api import create_app
from app.config import Settings
from app.db import Database
from app.mcp.http import standalone_app
from app.services.access import audit
from app.services.access.keys import KeyIn, create_key
from app.services.runtime import Elephant
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


def known_prefix(api: TestClient, db: Database) -> str:  # type: ignore[type-arg]
    """The prefix of a key that has verified in the API's process."""
    key = new_key(db)
    assert api.get("/stats", headers=bearer(key)).status_code == 200
    return key.split("_")[1]


def bad_key(prefix: str | None = None) -> str:
    """A well-formed key nobody holds (a fresh random prefix unless one is named)."""
    return f"ek_{prefix or secrets.token_hex(6)}_{secrets.token_urlsafe(32)}"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def limited(settings: Settings) -> Settings:
    return make_settings(
        settings.data_dir,
        embedded={"database": settings.embedded.database},
        auth={"rate_denied_per_minute": BUDGET},
    )


def new_key(db: Database) -> str:
    return create_key(db, KeyIn(tenant="guarded", scopes=["read", "write"])).key


def denials(db: Database, action: str, client: str) -> list[audit.AuditEntry]:
    return [
        entry
        for entry in audit.entries(db, tenant=None, limit=1000)
        if entry.outcome == "denied" and entry.action == action and entry.client == client
    ]


def statuses(responses: list[httpx.Response]) -> list[int]:
    return [response.status_code for response in responses]


# ------------------------------------------------------------------ MCP over HTTP


@pytest.fixture
def api(limited: Settings, elephant: Elephant) -> Iterator[TestClient]:  # type: ignore[type-arg]
    """A fresh API (a fresh budget), called from the TestClient's address 'testclient'."""
    with TestClient(app=create_app(limited, elephant), base_url="http://127.0.0.1:7777") as c:
        yield c


def test_bad_tokens_to_the_mcp_mount_get_429_after_the_budget_and_are_audited(
    api: TestClient,  # type: ignore[type-arg]
    db: Database,
) -> None:
    before = len(denials(db, "POST /mcp", "testclient"))
    key = bad_key(known_prefix(api, db))  # a wrong secret: refused without a lookup
    answers = [api.post("/mcp", json=INIT, headers={**ACCEPT, **bearer(key)}) for _ in range(40)]
    assert statuses(answers) == [401] * BUDGET + [429] * (40 - BUDGET)
    refused, limited = answers[0], answers[-1]
    assert refused.json()["error"] == "unauthorized"
    assert refused.headers["www-authenticate"].startswith("Bearer")
    assert limited.json()["error"] == "rate_limited"
    assert int(limited.headers["retry-after"]) >= 1
    assert f"at most {BUDGET} a minute" in limited.json()["message"]
    # a malformed token has a bucket of its own (per address), as spent as its own
    malformed = [api.post("/mcp", json=INIT, headers=bearer("nope")) for _ in range(BUDGET + 1)]
    assert statuses(malformed) == [401] * BUDGET + [429]
    # no key at all: fastmcp's challenge, audited too (it costs no lookup, no budget)
    assert api.post("/mcp", json=INIT, headers=ACCEPT).status_code == 401
    rows = denials(db, "POST /mcp", "testclient")
    assert len(rows) - before == 2 * BUDGET + 1, "one row per 401, none per 429"
    assert {entry.detail["reason"] for entry in rows} == {"unauthorized"}
    assert {entry.detail["status"] for entry in rows} == {401}


def test_rest_and_mcp_spend_one_budget(
    api: TestClient,  # type: ignore[type-arg]
    db: Database,
) -> None:
    key = bad_key(known_prefix(api, db))
    first = [api.get("/stats", headers=bearer(key)) for _ in range(3)]
    then = [api.post("/mcp", json=INIT, headers={**ACCEPT, **bearer(key)}) for _ in range(3)]
    assert statuses(first) + statuses(then) == [401, 401, 401, 401, 401, 429]
    assert api.get("/stats", headers=bearer(key)).status_code == 429
    other = bad_key(known_prefix(api, db))  # and the other way round
    mcp = [api.post("/mcp", json=INIT, headers={**ACCEPT, **bearer(other)}) for _ in range(BUDGET)]
    assert statuses(mcp) == [401] * BUDGET
    assert api.get("/stats", headers=bearer(other)).status_code == 429


def test_elephant_mcp_http_has_the_budget_and_the_audit(
    limited: Settings, elephant: Elephant, db: Database
) -> None:
    """`elephant mcp --http`'s app (MCP at /mcp, no REST beside it), on uvicorn."""
    before = len(denials(db, "POST /mcp", "127.0.0.1"))
    with serve_in_thread(standalone_app(limited, lambda: elephant)) as url:
        working = new_key(db)
        opened = httpx.post(f"{url}/mcp", json=INIT, headers={**ACCEPT, **bearer(working)})
        assert opened.status_code == 200, opened.text
        key = bad_key(working.split("_")[1])
        answers = [
            httpx.post(f"{url}/mcp", json=INIT, headers={**ACCEPT, **bearer(key)}, timeout=10)
            for _ in range(BUDGET + 2)
        ]
        valid = httpx.post(
            f"{url}/mcp", json=INIT, headers={**ACCEPT, **bearer(new_key(db))}, timeout=10
        )
    assert statuses(answers) == [401] * BUDGET + [429] * 2
    assert answers[-1].headers["retry-after"] and answers[-1].json()["error"] == "rate_limited"
    assert valid.status_code == 200, valid.text
    assert len(denials(db, "POST /mcp", "127.0.0.1")) - before == BUDGET


# ------------------------------------------------------------------ a guesser behind a NAT


def mcp_read_and_write(url: str, key: str) -> tuple[Any, Any]:
    async def scenario() -> tuple[Any, Any]:
        transport = StreamableHttpTransport(f"{url}/mcp", headers=bearer(key))
        async with Client(transport) as client:
            stats = await client.call_tool("stats", {})
            stored = await client.call_tool("store", {"text": "Noor parks her bike at gate 3"})
            return stats.structured_content, stored.structured_content

    return asyncio.run(scenario())


def test_a_guesser_does_not_lock_out_the_valid_keys_of_its_address(
    limited: Settings, elephant: Elephant, db: Database
) -> None:
    """200 wrong secrets from 127.0.0.1 on a working key's prefix (REST and MCP); a valid
    key never used before, from the same address, still reads and writes on both doors."""
    valid = new_key(db)
    with serve_in_thread(create_app(limited, elephant)) as url, httpx.Client(timeout=10) as http:
        working = new_key(db)
        assert http.get(f"{url}/stats", headers=bearer(working)).status_code == 200
        guess = bad_key(working.split("_")[1])
        tries = [http.get(f"{url}/stats", headers=bearer(guess)) for _ in range(100)] + [
            http.post(f"{url}/mcp", json=INIT, headers={**ACCEPT, **bearer(guess)})
            for _ in range(100)
        ]
        assert statuses(tries) == [401] * BUDGET + [429] * (200 - BUDGET)
        assert http.get(f"{url}/stats", headers=bearer(valid)).status_code == 200
        stored = http.post(
            f"{url}/commit",
            json={"text": "Noor's locker is number 12", "force": True},
            headers=bearer(valid),
        )
        assert stored.status_code == 201, stored.text
        stats, note = mcp_read_and_write(url, valid)
        assert "memories" in str(stats) and note["memory_id"]
        # the guesser is still throttled, on both doors
        assert http.get(f"{url}/stats", headers=bearer(guess)).status_code == 429
        again = http.post(f"{url}/mcp", json=INIT, headers={**ACCEPT, **bearer(guess)})
        assert again.status_code == 429


def drain(api: TestClient) -> int:  # type: ignore[type-arg]
    """Send fresh-prefix guesses until the address's cap answers 429; how many got 401."""
    for refused in range(3 * BUDGET * ADDRESS_FACTOR):
        answer = api.get("/stats", headers=bearer(bad_key()))
        if answer.status_code == 429:
            assert "unknown keys" in answer.json()["message"], answer.text
            return refused
        assert answer.status_code == 401, answer.text
    raise AssertionError("the address's cap never answered 429")


def test_cycling_prefixes_meets_the_address_cap_which_spares_verified_keys(
    api: TestClient,  # type: ignore[type-arg]
    db: Database,
) -> None:
    """A fresh prefix per try: each is a fresh bucket, but the address's failures of
    prefixes never seen to verify stop at ADDRESS_FACTOR x the budget (the bucket refills
    at that rate a minute, so a slow run may see a few more). A key that has verified is
    never held by that cap; one not yet seen (its first use during the flood) waits for
    the refill, like the guesser."""
    working, unseen = new_key(db), new_key(db)
    assert api.get("/stats", headers=bearer(working)).status_code == 200
    assert drain(api) >= BUDGET * ADDRESS_FACTOR
    # the documented price: a valid key first presented during the flood waits
    held = api.get("/stats", headers=bearer(unseen))
    assert held.status_code == 429 and int(held.headers["retry-after"]) >= 1, held.text
    fresh = api.post("/mcp", json=INIT, headers={**ACCEPT, **bearer(bad_key())})
    assert fresh.status_code == 429, fresh.text
    # the key that verified: reads and writes on REST, opens an MCP session
    assert api.get("/stats", headers=bearer(working)).status_code == 200
    write = api.post(
        "/commit", json={"text": "Gate 3 closes at ten", "force": True}, headers=bearer(working)
    )
    assert write.status_code == 201, write.text
    drain(api)
    session = api.post("/mcp", json=INIT, headers={**ACCEPT, **bearer(working)})
    assert session.status_code == 200, session.text
    # its prefix with a wrong secret is checked (its own bucket), not held by the cap
    drain(api)
    prefix = working.split("_")[1]
    assert api.get("/stats", headers=bearer(bad_key(prefix))).status_code == 401
    assert api.get("/stats", headers=bearer(working)).status_code == 200
