"""GET /usage: a tenant's LLM calls by day and operation, with tokens, latency and cost.

Usage rows are written by the service that records real LLM calls
(app/services/usage.record_usage; the tests have no LLM), some moved back in time;
the API runs in its default keys mode, once without prices (no cost: "not
configured", never $0) and once with metrics.llm_price_* set.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from litestar.testing import TestClient

from app.api import create_app
from app.config import Settings
from app.providers.llm import LLMUsage
from app.services.access.keys import KeyIn, create_key
from app.services.ops.overview import COST_NOT_CONFIGURED
from app.services.ops.usage import record_usage
from app.services.runtime import Elephant
from tests.conftest import make_settings

TENANT = "usage-acme"
OTHER = "usage-other"
PRICE_IN, PRICE_OUT = 3.0, 15.0  # USD per million tokens


def _usage(tokens_in: int, tokens_out: int, latency_ms: float) -> LLMUsage:
    return LLMUsage("anthropic", "claude-haiku-4-5", tokens_in, tokens_out, latency_ms, 1)


def _record(
    elephant: Elephant, tenant: str, operation: str, usage: LLMUsage, *, ok: bool, days_ago: int
) -> None:
    with elephant.db.tenant(tenant) as conn:
        record_usage(conn, tenant, operation, usage, ok=ok, error=None if ok else "timed out")
        row = conn.execute("SELECT max(id) FROM llm_usage").fetchone()
    assert row is not None
    if days_ago:
        with elephant.db.admin_connection() as admin:
            admin.execute(
                "UPDATE llm_usage SET created_at = now() - make_interval(days => %s) WHERE id = %s",
                (days_ago, row[0]),
            )


@pytest.fixture(scope="module")
def seeded(elephant: Elephant) -> None:
    _record(elephant, TENANT, "extract_facts", _usage(1000, 200, 800), ok=True, days_ago=0)
    _record(elephant, TENANT, "extract_facts", _usage(500, 0, 3000), ok=False, days_ago=0)
    _record(elephant, TENANT, "reflect", _usage(2000, 500, 1200), ok=True, days_ago=0)
    _record(elephant, TENANT, "extract_facts", _usage(100, 50, 400), ok=True, days_ago=3)
    _record(elephant, TENANT, "reflect", _usage(10_000, 1000, 900), ok=True, days_ago=40)
    _record(elephant, OTHER, "reflect", _usage(99_999, 9_999, 100), ok=True, days_ago=0)


def _key(elephant: Elephant, scopes: list[str]) -> str:
    return create_key(elephant.db, KeyIn(tenant=TENANT, scopes=scopes, name="usage")).key


@pytest.fixture(scope="module")
def client(settings: Settings, elephant: Elephant, seeded: None) -> Iterator[TestClient]:  # type: ignore[type-arg]
    with TestClient(app=create_app(settings, elephant), base_url="http://127.0.0.1:7777") as http:
        http.headers["Authorization"] = f"Bearer {_key(elephant, ['read'])}"
        yield http


def _get(client: TestClient, **params: Any) -> dict[str, Any]:  # type: ignore[type-arg]
    answer = client.get("/usage", params=params)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_usage_sums_by_operation_day_and_in_all_for_the_keys_tenant_only(
    client: TestClient,  # type: ignore[type-arg]
) -> None:
    body = _get(client)
    today = datetime.now(UTC).date()
    assert body["days"] == 30
    assert body["until"] == today.isoformat()
    assert body["since"] == (today - timedelta(days=29)).isoformat()
    total = body["total"]
    assert (total["calls"], total["failures"]) == (4, 1)
    assert (total["tokens_in"], total["tokens_out"]) == (3600, 750)  # not the other tenant's
    assert total["day"] is None and total["operation"] is None
    assert body["operations"] == ["extract_facts", "reflect"]
    extract, reflect = body["by_operation"]
    assert extract["operation"] == "extract_facts" and extract["day"] is None
    assert (extract["calls"], extract["failures"], extract["tokens_in"]) == (3, 1, 1600)
    assert extract["latency_ms_mean"] == 1400.0
    assert extract["latency_ms_p95"] == pytest.approx(2780.0)  # 800 + 0.9 * (3000 - 800)
    assert (reflect["calls"], reflect["tokens_out"]) == (1, 500)

    assert len(body["by_day"]) == 30  # every day, the quiet ones as zeros
    assert [row["day"] for row in body["by_day"]][-1] == today.isoformat()
    assert body["by_day"][-1]["calls"] == 3
    assert body["by_day"][-4]["calls"] == 1
    assert body["by_day"][0]["calls"] == 0 and body["by_day"][0]["latency_ms_mean"] is None
    assert {(row["day"], row["operation"], row["calls"]) for row in body["by_day_operation"]} == {
        (today.isoformat(), "extract_facts", 2),
        (today.isoformat(), "reflect", 1),
        ((today - timedelta(days=3)).isoformat(), "extract_facts", 1),
    }


def test_without_prices_there_is_no_cost_rather_than_zero(
    client: TestClient,  # type: ignore[type-arg]
) -> None:
    body = _get(client, days=7)
    assert body["prices"] == {
        "in_per_mtok": 0.0,
        "out_per_mtok": 0.0,
        "configured": False,
        "note": COST_NOT_CONFIGURED,
    }
    assert body["total"]["cost_usd"] is None
    assert all(row["cost_usd"] is None for row in body["by_operation"] + body["by_day"])


def test_the_window_is_days_back_from_today(client: TestClient) -> None:  # type: ignore[type-arg]
    assert _get(client, days=1)["total"]["calls"] == 3
    wide = _get(client, days=90)
    assert (wide["total"]["calls"], wide["total"]["tokens_in"]) == (5, 13_600)
    assert len(wide["by_day"]) == 90
    assert len(_get(client, days=365)["by_day"]) == 365


@pytest.mark.parametrize("days", ["0", "366", "-1", "week"])
def test_a_window_outside_1_to_365_days_is_refused(
    client: TestClient,  # type: ignore[type-arg]
    days: str,
) -> None:
    answer = client.get("/usage", params={"days": days})
    assert answer.status_code in (400, 422), answer.text
    assert answer.json()["error"] in ("invalid_input", "bad_request")
    assert "days" in answer.text


def test_usage_needs_a_key_with_the_read_scope(
    settings: Settings,
    elephant: Elephant,
    client: TestClient,  # type: ignore[type-arg]
) -> None:
    assert client.get("/usage", headers={"Authorization": ""}).status_code == 401
    writer_only = create_key(elephant.db, KeyIn(tenant=TENANT, scopes=["write"], name="w")).key
    refused = client.get("/usage", headers={"Authorization": f"Bearer {writer_only}"})
    assert refused.status_code == 403


def test_with_prices_set_the_cost_is_tokens_at_those_prices(
    settings: Settings, elephant: Elephant, seeded: None
) -> None:
    priced = make_settings(
        settings.data_dir,
        embedded={"database": settings.embedded.database},
        metrics={"llm_price_in_per_mtok": PRICE_IN, "llm_price_out_per_mtok": PRICE_OUT},
    )
    runtime = Elephant(settings=priced, db=elephant.db, embedder=elephant.embedder, llm=None)
    with TestClient(app=create_app(priced, runtime), base_url="http://127.0.0.1:7777") as http:
        http.headers["Authorization"] = f"Bearer {_key(elephant, ['read'])}"
        body = _get(http, days=30)
    assert body["prices"]["configured"] is True
    assert body["prices"]["in_per_mtok"] == PRICE_IN
    assert "$3 in / $15 out per million tokens" in body["prices"]["note"]
    # (3600 * 3 + 750 * 15) / 1e6
    assert body["total"]["cost_usd"] == pytest.approx(0.02205)
    extract, reflect = body["by_operation"]
    assert extract["cost_usd"] == pytest.approx((1600 * 3 + 250 * 15) / 1e6)
    assert reflect["cost_usd"] == pytest.approx((2000 * 3 + 500 * 15) / 1e6)
    assert body["by_day"][0]["cost_usd"] == 0.0  # priced, and no calls that day
