"""Inputs that once reached Postgres and answered 500 (found by fuzzing the API) are now a
422 naming the field, and write nothing; every error answers {"error", "message"}.

Causes: a NUL byte in any string, blank strings where text is needed, dates pushed past
year 1 / 9999 by their offset, deeply nested metadata, numbers that underflow a real
column, and an old event date under the recency prior.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from litestar import Litestar, get
from litestar.testing import TestClient
from pydantic import ValidationError

from app.api.errors import EXCEPTION_HANDLERS, INTERNAL_MESSAGE
from app.config import Settings
from app.errors import InvalidInput
from app.services.common.inputs import require_text
from app.services.graph import reads
from app.services.memory.schemas import NoteIn
from app.services.runtime import Elephant
from tests.conftest import api_client, count_rows

Client = TestClient  # type: ignore[type-arg]
TENANT = "hardening"
TABLES = ("memories", "admission_log", "jobs", "turns", "conversations", "facts")


@pytest.fixture(scope="module")
def client(settings: Settings, elephant: Elephant) -> Iterator[Client]:
    with api_client(settings, elephant) as test_client:
        test_client.headers["X-Elephant-Tenant"] = TENANT
        yield test_client


def snapshot(elephant: Elephant) -> dict[str, int]:
    return {table: count_rows(elephant.db, TENANT, table) for table in TABLES}


def rejected(response: Any, *words: str) -> str:
    """The 422 message, after checking it has the app's shape and names ``words``."""
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "invalid_input"
    for word in words:
        assert word in body["message"], body["message"]
    return str(body["message"])


def nested(depth: int) -> str:
    """A JSON object ``depth`` levels deep, as text: json.dumps would hit Python's
    recursion limit before the server sees it."""
    return '{"a": ' * (depth - 1) + "{}" + "}" * (depth - 1)


def post_json(client: Client, path: str, text: str) -> Any:
    return client.post(path, content=text.encode(), headers={"Content-Type": "application/json"})


# ------------------------------------------------------------------ NUL and surrogates


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/commit", {"text": "Alice moved to Paris\x00"}, "text"),
        ("/commit", {"text": "Alice moved to Paris", "source": "a\x00b"}, "source"),
        ("/commit", {"text": "Alice moved to Paris", "metadata": {"k\x00": 1}}, "metadata"),
        ("/commit", {"text": "Alice moved to Paris", "metadata": {"k": ["\x00"]}}, "metadata"),
        (
            "/commit_conversation",
            {"turns": [{"speaker": "Al\x00ce", "text": "I moved to Paris"}]},
            "speaker",
        ),
        ("/commit_conversation", {"turns": [{"speaker": "A", "text": "x\x00"}]}, "text"),
        ("/sessions/close", {"project": "p", "transcript": "Alice: hi\x00"}, "transcript"),
        ("/search", {"query": "Paris\x00"}, "query"),
        ("/search", {"query": "Paris", "filters": {"source": ["\x00"]}}, "source"),
        ("/reflect", {"q": "Where\x00?"}, "q"),
        ("/proactive", {"messages": ["Paris\x00"]}, "messages"),
        ("/graph/entities", {"entities": [{"name": "Al\x00ce"}]}, "name"),
        (
            "/graph/record",
            {"entities": [{"name": "Alice", "observations": ["\x00"]}]},
            "observations",
        ),
        ("/graph/open", {"names": ["Al\x00ce"]}, "names"),
        ("/keys", {"tenant": "t1", "name": "ci\x00"}, "name"),
    ],
)
def test_a_nul_byte_is_a_422_naming_the_field(
    client: Client, elephant: Elephant, path: str, body: dict[str, Any], field: str
) -> None:
    before = snapshot(elephant)
    rejected(client.post(path, json=body), field, "NUL")
    assert snapshot(elephant) == before


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/search", {"q": "Paris\x00"}, "q"),
        ("/graph/search", {"q": "Paris\x00"}, "q"),
        ("/graph", {"q": "\x00"}, "q"),
        ("/handoff", {"project": "p\x00"}, "project"),
        ("/memories", {"source": "\x00"}, "source"),
    ],
)
def test_a_nul_byte_in_a_query_parameter_is_a_422(
    client: Client, path: str, params: dict[str, str], field: str
) -> None:
    rejected(client.get(path, params=params), f"query parameter {field}", "NUL")


def test_a_nul_byte_in_a_path_parameter_is_a_422(client: Client) -> None:
    rejected(client.post("/keys/ab%00cd/revoke"), "path parameter prefix", "NUL")


def test_a_lone_surrogate_is_refused_as_unencodable(client: Client, elephant: Elephant) -> None:
    """The API's JSON decoder already refuses the escape (400); MCP arguments reach the
    models as Python strings, where the text rule names the character."""
    before = snapshot(elephant)
    body = b'{"text": "Alice moved to Paris \\ud800"}'
    response = client.post("/commit", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "bad_request"
    assert snapshot(elephant) == before
    with pytest.raises(ValidationError, match="text"):
        NoteIn(text="Alice moved to Paris \ud800")
    with pytest.raises(InvalidInput, match=r"q: contains a lone surrogate \(U\+D800\)"):
        require_text("q", "Paris \ud800")


def test_services_check_query_text_for_mcp_callers_too(elephant: Elephant) -> None:
    """MCP's search_nodes passes its argument straight to the service."""
    with pytest.raises(InvalidInput, match="query: contains a NUL"):
        reads.search_nodes(elephant, TENANT, "Paris\x00")


# ------------------------------------------------------------------ blank strings


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/proactive", {"messages": ["", "   "]}, "messages"),
        (
            "/graph/observations",
            {"observations": [{"entity": "Alice", "contents": ["  "]}]},
            "contents",
        ),
        (
            "/graph/record",
            {"observations": [{"entity": "Alice", "contents": [""]}]},
            "contents",
        ),
        (
            "/graph/decisions",
            {"name": "Use Postgres", "decided": "Postgres", "because": "one DB", "supersedes": " "},
            "supersedes",
        ),
        ("/commit", {"text": "   "}, "text"),
        ("/search", {"query": "  "}, "query"),
    ],
)
def test_a_blank_string_is_a_422_naming_the_field(
    client: Client, elephant: Elephant, path: str, body: dict[str, Any], field: str
) -> None:
    before = snapshot(elephant)
    rejected(client.post(path, json=body), field)
    assert snapshot(elephant) == before


def test_a_blank_query_in_get_search_is_a_422(client: Client) -> None:
    rejected(client.get("/search", params={"q": "   "}), "query")


def test_a_rejected_decision_leaves_the_graph_unchanged(client: Client) -> None:
    body = {"name": "Use Postgres", "decided": "Postgres", "because": "one DB", "supersedes": ""}
    rejected(client.post("/graph/decisions", json=body), "supersedes")
    opened = client.post("/graph/open", json={"names": ["Use Postgres"]})
    assert opened.status_code == 200, opened.text
    assert opened.json()["missing"] == ["Use Postgres"]


# ------------------------------------------------------------------ dates


@pytest.mark.parametrize("when", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"])
def test_a_date_pushed_out_of_range_by_its_offset_is_a_422(
    client: Client, elephant: Elephant, when: str
) -> None:
    before = snapshot(elephant)
    note = {"text": "Alice moved to Paris in spring", "occurred_at": when}
    rejected(client.post("/commit", json=note), "occurred_at", "out of range")
    turns = [{"speaker": "Alice", "text": "I moved to Paris", "timestamp": when}]
    rejected(client.post("/commit_conversation", json={"turns": turns}), "timestamp")
    conversation = {"turns": [{"speaker": "Alice", "text": "hi"}], "session_date": when}
    rejected(client.post("/commit_conversation", json=conversation), "session_date")
    search = {"query": "Paris", "filters": {"created_after": when}}
    rejected(client.post("/search", json=search), "created_after")
    rejected(client.post("/graph/open", json={"names": ["Alice"], "as_of": when}), "as_of")
    assert snapshot(elephant) == before


def test_dates_are_stored_in_utc(client: Client, elephant: Elephant) -> None:
    note = {
        "text": "Bob adopted a dog named Rex in Lyon",
        "occurred_at": "2023-05-08T23:30:00-05:00",
    }
    response = client.post("/commit", json=note, params={"wait": False})
    assert response.status_code == 201, response.text
    with elephant.db.tenant(TENANT) as conn:
        row = conn.execute(
            "SELECT event_at FROM memories WHERE id = %s", (response.json()["memory_id"],)
        ).fetchone()
    assert row is not None
    assert row[0].isoformat().startswith("2023-05-09T04:30:00")


def test_an_old_event_date_under_the_recency_prior_is_no_underflow(client: Client) -> None:
    """0.5^(age / 23 days) underflows float8 for a memory a century old: the exponent is
    capped, so search answers."""
    note = {"text": "Grandpa Joe built the Oak Street house himself", "occurred_at": "1901-01-01"}
    assert client.post("/commit", json=note).status_code == 201
    found = client.post("/search", json={"query": "Oak Street house", "recency_weight": 0.5})
    assert found.status_code == 200, found.text
    assert any("Oak Street" in hit["text"] for hit in found.json()["results"])


# ------------------------------------------------------------------ metadata and numbers


def test_deep_metadata_is_a_422(client: Client, elephant: Elephant) -> None:
    before = snapshot(elephant)
    note = '{"text": "Alice moved to Paris in spring", "metadata": ' + nested(990) + "}"
    rejected(post_json(client, "/commit", note), "metadata", "16 levels")
    note = '{"text": "Alice moved to Paris in spring", "metadata": ' + nested(17) + "}"
    rejected(post_json(client, "/commit", note), "metadata", "16 levels")
    turns = '[{"speaker": "A", "text": "hi"}]'
    conversation = '{"turns": ' + turns + ', "metadata": ' + nested(17) + "}"
    rejected(post_json(client, "/commit_conversation", conversation), "metadata")
    assert snapshot(elephant) == before


def test_metadata_within_the_limits_is_kept(client: Client, elephant: Elephant) -> None:
    note = '{"text": "Carol teaches piano on Tuesdays in Lyon", "metadata": ' + nested(16) + "}"
    response = post_json(client, "/commit", note)
    assert response.status_code == 201, response.text


def test_oversized_metadata_is_a_422(client: Client) -> None:
    note = {"text": "Dan runs marathons in Berlin", "metadata": {"blob": "x" * 70_000}}
    rejected(client.post("/commit", json=note), "metadata", "65536")


def test_an_underflowing_threshold_is_rounded_and_commits_still_work(
    client: Client, elephant: Elephant
) -> None:
    """1e-46 does not fit a real column (the admission log stores the threshold)."""
    response = client.put("/amac/threshold", json={"threshold": 1e-46})
    assert response.status_code == 200, response.text
    assert response.json() == {"threshold": 0.0}
    note = {"text": "Erin plays the cello in the Lyon orchestra", "importance": 1e-46}
    committed = client.post("/commit", json=note)
    assert committed.status_code == 201, committed.text
    with elephant.db.tenant(TENANT) as conn:
        row = conn.execute(
            "SELECT importance FROM memories WHERE id = %s", (committed.json()["memory_id"],)
        ).fetchone()
    assert row is not None and row[0] == 0.0
    assert client.put("/amac/threshold", json={"threshold": None}).status_code == 200


# ------------------------------------------------------------------ the error shape


def test_litestar_errors_answer_in_the_app_shape(client: Client, settings: Settings) -> None:
    cases = [
        (client.get("/no/such/path"), 404, "not_found"),
        (client.delete("/commit"), 405, "method_not_allowed"),
        (
            client.post(
                "/commit", content=b"{not json", headers={"Content-Type": "application/json"}
            ),
            400,
            "bad_request",
        ),
        (
            client.post("/commit", content=b"x" * (settings.server.max_body_bytes + 1)),
            413,
            "payload_too_large",
        ),
    ]
    for response, status, code in cases:
        assert response.status_code == status, response.text
        body = response.json()
        assert body["error"] == code and body["message"], body
        assert set(body) <= {"error", "message", "details"}


def test_an_unexpected_error_is_a_logged_500_without_internals(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @get("/boom", sync_to_thread=False)
    def boom() -> None:
        raise RuntimeError("password=hunter2")

    app = Litestar(
        [boom],
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        logging_config=None,  # Litestar's would replace caplog's root handler
    )
    with caplog.at_level(logging.ERROR, logger="app.api.errors"), TestClient(app) as test_client:
        response = test_client.get("/boom")
    assert response.status_code == 500
    body = response.json()
    rid = body["details"]["request_id"]
    assert body["error"] == "internal_error" and body["message"].startswith(INTERNAL_MESSAGE)
    assert "hunter2" not in response.text and rid in body["message"]
    record = next(r for r in caplog.records if r.name == "app.api.errors")
    assert record.exc_info is not None and "hunter2" in str(record.exc_info[1])
    assert rid in record.getMessage()  # the id in the response finds the traceback in the log
