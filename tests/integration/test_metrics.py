"""GET /metrics on a real uvicorn server: the counters a commit, a search and a refused
request move, with their labels (route templates, never tenants); who may scrape; a
scrape while the database is unreachable degrades instead of failing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.api import create_app
from app.config import Settings
from app.db import Database
from app.db.embedded import EmbeddedPostgres
from app.providers.embedder import Embedder
from app.services.access.keys import KeyIn, create_key
from app.services.jobs.runner import drain
from app.services.runtime import Elephant
from tests.conftest import (
    make_settings,
    operator_key,
    refusable_database,
    serve_in_thread,
)

TENANT = "metrics-tenant-7f3a"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@contextmanager
def served(settings: Settings, elephant: Elephant) -> Iterator[str]:
    """The API served by uvicorn on 127.0.0.1 in a thread; yields its base URL."""
    with serve_in_thread(create_app(settings, elephant), log_config=None) as url:
        yield url


def scrape(base: str, key: str | None) -> tuple[str, Samples]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    response = httpx.get(f"{base}/metrics", headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    samples: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return response.text, samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: Samples, name: str, **labels: str) -> float:
    """Sum over the series of ``name`` whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(v for (n, found), v in samples.items() if n == name and wanted <= found)


@pytest.fixture(scope="module")
def runtime(settings: Settings, db: Database, embedder: Embedder) -> Elephant:
    return Elephant(settings=settings, db=db, embedder=embedder, llm=None)


@pytest.fixture(scope="module")
def base(settings: Settings, runtime: Elephant) -> Iterator[str]:
    with served(settings, runtime) as url:
        yield url


@pytest.fixture(scope="module")
def admin(db: Database) -> str:
    return operator_key(db, "metrics scraper")


def test_commit_search_and_a_refusal_move_their_counters(
    base: str, admin: str, runtime: Elephant
) -> None:
    headers = {"Authorization": f"Bearer {admin}", "X-Elephant-Tenant": TENANT}
    _, before = scrape(base, admin)
    with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
        committed = client.post(
            "/commit", json={"text": "Ines moved the nightly backups of the billing DB to 02:00"}
        )
        assert committed.status_code in (200, 201), committed.text
        searched = client.post("/search", json={"query": "when do billing backups run?"})
        assert searched.status_code == 200, searched.text
        refused = client.post("/search", json={"query": ""})
        assert 400 <= refused.status_code < 500, refused.text
        missing = client.get("/memories/00000000-0000-0000-0000-000000000000")
        assert missing.status_code == 404, missing.text
    text, after = scrape(base, admin)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    requests = "elephant_http_requests_total"
    assert delta(requests, method="POST", route="/commit", status=str(committed.status_code)) == 1
    assert delta(requests, method="POST", route="/search", status="200") == 1
    assert delta(requests, method="POST", route="/search", status=str(refused.status_code)) == 1
    # The route template labels the series, never the raw path (ids stay out of the page).
    memory_routes = {
        dict(labels)["route"]
        for (name, labels) in after
        if name == requests and dict(labels)["route"].startswith("/memories/")
    }
    assert memory_routes and all("{" in route for route in memory_routes), memory_routes
    assert "00000000-0000" not in text
    assert TENANT not in text, "a tenant id leaked into /metrics"
    latency = "elephant_http_request_duration_seconds_count"
    assert delta(latency, method="POST", route="/search") == 2
    # The search's phases, and the query embedding it waited for.
    for phase in ("embedding", "sql", "total"):
        assert delta("elephant_search_phase_seconds_count", phase=phase) == 1, phase
    assert delta("elephant_embedding_seconds_count", kind="query") == 1
    assert delta("elephant_embedded_texts_total", kind="query") >= 1
    # The commit embedded its note (the write path's documents are timed too).
    assert delta("elephant_embedding_seconds_count", kind="document") >= 1
    assert delta("elephant_embedded_texts_total", kind="document") >= 1
    # The gate judged the note (offline scorer: no LLM here).
    decisions = total(after, "elephant_gate_decisions_total") - total(
        before, "elephant_gate_decisions_total"
    )
    assert decisions >= 1
    # The pool, read at scrape time.
    assert value(after, "elephant_db_pool_connections", pool="app") >= 1
    assert (
        value(after, "elephant_db_pool_max", pool="app") == runtime.settings.database.pool_max_size
    )
    assert value(after, "elephant_db_pool_requests_total", pool="app") > value(
        before, "elephant_db_pool_requests_total", pool="app"
    )


def test_queue_depth_then_job_outcomes(base: str, admin: str, runtime: Elephant) -> None:
    headers = {"Authorization": f"Bearer {admin}", "X-Elephant-Tenant": TENANT}
    with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
        turns = [
            {"speaker": "Omar", "text": "We agreed to ship the importer in Rust next sprint."},
            {"speaker": "Ines", "text": "I will write the CSV parser tests on Monday."},
        ]
        answer = client.post("/commit_conversation", json={"turns": turns})
        assert answer.status_code in (200, 201), answer.text
        assert answer.json()["job_ids"], answer.text
    _, queued = scrape(base, admin)
    depth = total(queued, "elephant_queue_jobs", status="queued")
    assert depth >= 1, "the conversation's jobs should wait in the queue (no worker runs)"
    ran = drain(runtime)
    assert ran >= 1
    _, done = scrape(base, admin)
    assert total(done, "elephant_queue_jobs", status="queued") < depth
    outcomes = total(done, "elephant_jobs_total") - total(queued, "elephant_jobs_total")
    assert outcomes == ran


def test_llm_tokens_and_cost_by_operation(
    settings: Settings, db: Database, embedder: Embedder
) -> None:
    from tests.fakes import ScriptedLLM

    priced = make_settings(
        settings.data_dir,
        embedded={"database": settings.embedded.database},
        metrics={"llm_price_in_per_mtok": 3.0, "llm_price_out_per_mtok": 15.0, "public": True},
    )
    llm = ScriptedLLM(
        answers={"GateScores": [{"relevance": 9, "specificity": 9, "reason": "concrete"}]}
    )
    elephant = Elephant(settings=priced, db=db, embedder=embedder, llm=llm)  # type: ignore[arg-type]
    with served(priced, elephant) as url:
        _, before = scrape(url, None)
        with httpx.Client(base_url=url, headers={"X-Elephant-Tenant": TENANT}, timeout=60) as c:
            key = operator_key(db, "llm metrics")
            c.headers["Authorization"] = f"Bearer {key}"
            answer = c.post("/commit", json={"text": "Amara renewed the TLS certificate on May 3"})
            assert answer.status_code in (200, 201), answer.text
        _, after = scrape(url, None)
    assert llm.calls, "the gate should have asked the LLM"
    model = "scripted/fake-1"
    tokens_out = value(
        after, "elephant_llm_tokens_total", operation="gate", model=model, direction="out"
    )
    assert tokens_out - value(
        before, "elephant_llm_tokens_total", operation="gate", model=model, direction="out"
    ) == 20 * len([c for c in llm.calls if c[0] == "GateScores"])
    calls = "elephant_llm_calls_total"
    assert value(after, calls, operation="gate", model=model, outcome="ok") > value(
        before, calls, operation="gate", model=model, outcome="ok"
    )
    tokens_in = value(
        after, "elephant_llm_tokens_total", operation="gate", model=model, direction="in"
    )
    cost = value(after, "elephant_llm_cost_usd_total", operation="gate", model=model)
    assert cost == pytest.approx((tokens_in * 3.0 + tokens_out * 15.0) / 1e6)


def test_who_may_scrape(settings: Settings, db: Database, base: str, admin: str) -> None:
    reader = create_key(db, KeyIn(tenant=TENANT, scopes=["read"])).key
    assert httpx.get(f"{base}/metrics", timeout=30).status_code == 401
    refused = httpx.get(
        f"{base}/metrics", headers={"Authorization": f"Bearer {reader}"}, timeout=30
    )
    assert refused.status_code == 403, refused.text
    assert "admin" in refused.json()["message"]

    def audited() -> tuple[int, int]:
        with db.admin_connection() as conn:
            row = conn.execute(
                "SELECT count(*) FILTER (WHERE outcome = 'ok'), count(*) FROM audit_log "
                "WHERE action = 'GET /metrics'"
            ).fetchone()
        assert row is not None
        return int(row[0]), int(row[1])

    ok_before, all_before = audited()
    scrape(base, admin)
    scrape(base, admin)
    # a scrape is polled: its successes stay out of the audit log, its denials do not
    assert audited() == (ok_before, all_before)
    assert all_before >= 1


def test_public_and_disabled_settings(settings: Settings, runtime: Elephant) -> None:
    public = make_settings(
        settings.data_dir,
        embedded={"database": settings.embedded.database},
        metrics={"public": True},
    )
    with served(public, runtime) as url:
        scrape(url, None)
    off = make_settings(
        settings.data_dir,
        embedded={"database": settings.embedded.database},
        metrics={"enabled": False},
    )
    with served(off, runtime) as url:
        key = operator_key(runtime.db, "scraper of a disabled page")
        gone = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {key}"}, timeout=30)
        assert gone.status_code == 404


@pytest.fixture
def outage_db(
    pg_server: EmbeddedPostgres, new_database: Callable[..., str], settings: Settings
) -> Iterator[tuple[Settings, Database, Callable[[bool], None]]]:
    """An app database of its own, and a switch that refuses (or allows) every connection
    to it: the server answers, the database does not, as in an outage."""
    with refusable_database(
        pg_server,
        new_database,
        settings,
        "metrics_outage",
        metrics={"public": True},
        worker={"enabled": False},
    ) as found:
        yield found


def test_a_scrape_during_a_database_outage_degrades(
    outage_db: tuple[Settings, Database, Callable[[bool], None]], embedder: Embedder
) -> None:
    own, database, refuse = outage_db
    elephant = Elephant(settings=own, db=database, embedder=embedder, llm=None)
    with served(own, elephant) as url:
        _, healthy = scrape(url, None)
        assert ("elephant_queue_jobs", frozenset()) not in healthy  # a family, no samples yet
        errors = value(healthy, "elephant_scrape_errors_total", source="database")
        refuse(True)
        text, down = scrape(url, None)
        assert "elephant_queue_jobs" not in text
        assert value(down, "elephant_scrape_errors_total", source="database") == errors + 1
        assert ("elephant_http_requests_total", frozenset()) not in down
        assert total(down, "elephant_http_requests_total", route="/metrics") >= 1
        assert value(down, "elephant_db_pool_max", pool="app") == own.database.pool_max_size
