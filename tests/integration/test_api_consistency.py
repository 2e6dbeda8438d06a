"""One API: the same error shape for every 4xx/5xx, ``query`` everywhere (``q`` still
accepted), times in UTC with ``Z``, keyset cursors on every list, and memories that can
be updated without their text vanishing.

Against the API served by uvicorn on 127.0.0.1 (the MCP mount included), on this
module's real database.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from uuid import uuid4

import httpx
import pytest

from app.api import create_app
from app.config import Settings
from app.db import Database
from app.providers.embedder import Embedder
from app.services.access.keys import KeyIn, create_key
from app.services.common import jsonable, paging
from app.services.runtime import Elephant
from tests.conftest import make_settings, operator_key, serve_in_thread

RFC3339_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$")
MAX_BODY = 64 * 1024


@pytest.fixture(scope="module")
def base_url(settings: Settings, db: Database, embedder: Embedder) -> Iterator[str]:
    """The API (MCP mounted) with a 64 KiB body limit and no rate limits."""
    served = make_settings(
        settings.data_dir,
        embedded={"database": settings.embedded.database},
        server={"max_body_bytes": MAX_BODY},
        auth={"rate_read_per_minute": 0, "rate_write_per_minute": 0, "rate_admin_per_minute": 0},
    )
    runtime = Elephant(settings=served, db=db, embedder=embedder, llm=None)
    with serve_in_thread(create_app(served, runtime), log_level="error") as url:
        yield url


@pytest.fixture(scope="module")
def client(base_url: str, db: Database) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {operator_key(db, 'consistency')}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=60) as http:
        yield http


def as_tenant(tenant: str) -> dict[str, str]:
    return {"X-Elephant-Tenant": tenant}


def ok(response: httpx.Response) -> Any:
    assert response.status_code < 300, (response.status_code, response.text)
    return response.json()


def commit(client: httpx.Client, tenant: str, text: str, **extra: Any) -> str:
    body = {"text": text, "force": True, **extra}
    response = client.post("/commit", json=body, headers=as_tenant(tenant), params={"wait": True})
    return str(ok(response)["memory_id"])


def field_error(response: httpx.Response, key: str) -> dict[str, Any]:
    """A 422 in the error shape whose message and details name ``key``."""
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "invalid_input" and body["message"].startswith(f"{key}:"), body
    assert key in [field.get("key") for field in body["details"]["fields"]], body
    return dict(body)


# ------------------------------------------------------------------ one error shape


def test_every_error_has_the_error_shape(client: httpx.Client, db: Database) -> None:
    json_type = {"content-type": "application/json"}
    reader = create_key(db, KeyIn(tenant="shape", scopes=["read"])).key
    cases: list[tuple[str, str, dict[str, Any], int, str]] = [
        ("POST", "/search", {"content": b"{bad", "headers": json_type}, 400, "bad_request"),
        ("GET", "/no/such/path", {}, 404, "not_found"),
        ("DELETE", "/search", {}, 405, "method_not_allowed"),
        ("PATCH", "/memories", {"json": {}}, 405, "method_not_allowed"),
        (
            "POST",
            "/search",
            {"content": b" " * (MAX_BODY + 1), "headers": json_type},
            413,
            "payload_too_large",
        ),
        (
            "POST",
            "/search",
            {"content": b"x", "headers": {"content-type": "text/plain"}},
            415,
            "unsupported_media_type",
        ),
        ("GET", "/memories", {"params": {"limit": 0}}, 422, "invalid_input"),
        ("GET", "/memories", {"params": {"limit": "many"}}, 422, "invalid_input"),
        ("GET", f"/memories/{uuid4()}", {}, 404, "not_found"),
        (
            "GET",
            "/memories",
            {"headers": {"Authorization": "Bearer ek_nope"}},
            401,
            "unauthorized",
        ),
        (
            "DELETE",
            f"/memories/{uuid4()}",
            {"headers": {"Authorization": f"Bearer {reader}"}},
            403,
            "forbidden",
        ),
        ("GET", "/memories", {"headers": {"Host": "evil.example"}}, 421, "misdirected_host"),
        ("GET", "/schema/no-such-page", {}, 404, "not_found"),  # Litestar writes HTML
        ("GET", "/mcp/no/such/path", {}, 404, "not_found"),  # the MCP app writes text
    ]
    for method, path, options, status, code in cases:
        response = client.request(method, path, **options)
        assert response.status_code == status, (method, path, response.text)
        assert response.headers["content-type"].startswith("application/json"), (path, response)
        body = response.json()
        assert body["error"] == code and isinstance(body["message"], str), (path, body)
        assert body["message"], (path, body)
        assert int(response.headers["content-length"]) == len(response.content)
    allowed = client.delete("/search")
    assert "GET" in allowed.headers["allow"] and "allowed: " in allowed.json()["message"]
    assert "/schema" in client.get("/no/such/path").json()["message"]


def test_mcp_keeps_its_protocol_errors_and_gets_a_message_on_401(client: httpx.Client) -> None:
    """JSON-RPC errors stay JSON-RPC (MCP clients read them); the 401 of a missing key
    gains the error shape."""
    unauthenticated = httpx.post(
        f"{client.base_url}/mcp".replace("//mcp", "/mcp"),
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"accept": "application/json, text/event-stream"},
    )
    assert unauthenticated.status_code == 401, unauthenticated.text
    body = unauthenticated.json()
    assert body["error"] == "unauthorized" and "Authorization: Bearer" in body["message"], body
    garbled = client.post(
        "/mcp",
        content=b"{bad",
        headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        },
    )
    assert garbled.status_code == 400 and garbled.json()["jsonrpc"] == "2.0", garbled.text


# ------------------------------------------------------------------ one vocabulary


def test_query_everywhere_and_q_still_works(client: httpx.Client) -> None:
    tenant = "vocabulary"
    commit(client, tenant, "Ines grows saffron crocuses on her balcony in Porto")
    ok(
        client.post(
            "/graph/entities",
            json={"entities": [{"name": "Ines", "entity_type": "person"}]},
            headers=as_tenant(tenant),
        )
    )
    headers = as_tenant(tenant)
    by_query = ok(client.get("/search", params={"query": "saffron"}, headers=headers))
    by_q = ok(client.get("/search", params={"q": "saffron"}, headers=headers))
    assert by_query["results"] and [h["id"] for h in by_query["results"]] == [
        h["id"] for h in by_q["results"]
    ]
    same = {"query": "saffron", "q": "saffron"}
    assert client.get("/search", params=same, headers=headers).status_code == 200
    field_error(client.get("/search", params={"query": "a", "q": "b"}, headers=headers), "query")
    field_error(client.get("/search", params={"limit": 3}, headers=headers), "query")

    for body in (
        {"query": "Where does Ines grow saffron?"},
        {"q": "Where does Ines grow saffron?"},
    ):
        reflected = ok(client.post("/reflect", json=body, headers=headers))
        assert reflected["question"] == "Where does Ines grow saffron?"
        assert reflected["sources"], reflected
    field_error(client.post("/reflect", json={"query": "a", "q": "b"}, headers=headers), "query")
    field_error(client.post("/reflect", json={"limit": 3}, headers=headers), "query")

    for params in ({"query": "ines"}, {"q": "ines"}):
        found = ok(client.get("/graph/search", params=params, headers=headers))
        assert found["entities"][0]["name"] == "Ines", found
        around = ok(client.get("/graph", params=params, headers=headers))
        assert "Ines" in [node["name"] for node in around["nodes"]], around
    field_error(
        client.get("/graph/search", params={"query": "a", "q": "b"}, headers=headers), "query"
    )
    field_error(client.get("/graph", params={"query": "a", "q": "b"}, headers=headers), "query")


def test_the_openapi_document_names_query_and_marks_q_deprecated(client: httpx.Client) -> None:
    document = ok(client.get("/schema/openapi.json"))
    for path in ("/search", "/graph/search", "/graph"):
        parameters = {p["name"]: p for p in document["paths"][path]["get"]["parameters"]}
        assert "query" in parameters and "Deprecated" in parameters["q"]["description"], path
    reflect = document["paths"]["/reflect"]["post"]["requestBody"]["content"]["application/json"]
    ref = reflect["schema"]["$ref"].rsplit("/", 1)[-1]
    assert {"query", "q"} <= document["components"]["schemas"][ref]["properties"].keys()
    patch = document["paths"]["/memories/{memory_id}"]["patch"]
    assert "requestBody" in patch
    for path in (
        "/memories",
        "/facts",
        "/contradictions",
        "/jobs",
        "/audit",
        "/keys",
        "/graph/entities",
    ):
        operation = document["paths"][path]["get"]
        assert {"limit", "cursor"} <= {p["name"] for p in operation["parameters"]}, path
        schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
        page = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
        assert {"items", "next_cursor"} <= page["properties"].keys(), path


# ------------------------------------------------------------------ one date format


def test_times_are_utc_with_z(client: httpx.Client) -> None:
    tenant = "dates"
    memory_id = commit(
        client,
        tenant,
        "Jonas rebuilt the bakery oven in Linz",
        occurred_at="2024-05-03T10:00:00+02:00",
    )
    memory = ok(client.get(f"/memories/{memory_id}", headers=as_tenant(tenant)))
    assert RFC3339_Z.match(memory["created_at"]), memory["created_at"]
    assert memory["event_at"] == "2024-05-03T08:00:00Z"
    fact = ok(client.get("/facts", params={"limit": 1}, headers=as_tenant(tenant)))["items"][0]
    assert RFC3339_Z.match(fact["recorded_at"]) and RFC3339_Z.match(fact["created_at"])
    keys = ok(client.get("/keys", params={"limit": 1, "all_tenants": True}))
    key_times = keys["items"][0]["created_at"]
    assert RFC3339_Z.match(key_times), key_times


def test_the_shared_encoder_writes_what_the_api_writes() -> None:
    vienna = timezone(timedelta(hours=1))
    moment = datetime(2026, 12, 1, 16, 7, 31, 123456, tzinfo=vienna)
    assert jsonable.utc_text(moment) == "2026-12-01T15:07:31.123456Z"
    assert jsonable.utc_text(datetime(2026, 12, 1, 15, 7, 31)) == "2026-12-01T15:07:31Z"
    text = json.dumps({"at": moment, "day": moment.date()}, default=jsonable.default)
    assert json.loads(text) == {"at": "2026-12-01T15:07:31.123456Z", "day": "2026-12-01"}


# ------------------------------------------------------------------ cursor paging


def walk(
    client: httpx.Client, path: str, tenant: str | None, limit: int, **params: Any
) -> list[dict[str, Any]]:
    """Every item of a listing, following next_cursor to the end (bounded)."""
    headers = as_tenant(tenant) if tenant else {}
    seen: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(100):
        query = {"limit": limit, **params, **({"cursor": cursor} if cursor else {})}
        page = ok(client.get(path, params=query, headers=headers))
        assert len(page["items"]) <= limit
        seen.extend(page["items"])
        cursor = page["next_cursor"]
        if cursor is None:
            return seen
        assert page["items"], "a page with a next cursor has items"
    raise AssertionError(f"{path}: still paging after 100 pages")


def test_memories_and_facts_page_by_cursor_stable_under_inserts(client: httpx.Client) -> None:
    tenant = "paging"
    texts = [f"Karla planted {n} apple trees in orchard {n} near Krems" for n in range(5)]
    ids = [commit(client, tenant, text) for text in texts]
    assert [m["id"] for m in walk(client, "/memories", tenant, 2)] == ids[::-1]

    first = ok(client.get("/memories", params={"limit": 2}, headers=as_tenant(tenant)))
    assert first["total"] == 5 and first["next_offset"] == 2  # asked without a cursor
    assert [m["id"] for m in first["items"]] == ids[::-1][:2]
    newer = commit(client, tenant, "Karla bought a cider press from a farm in Melk")
    rest = ok(
        client.get(
            "/memories",
            params={"limit": 10, "cursor": first["next_cursor"]},
            headers=as_tenant(tenant),
        )
    )
    assert [m["id"] for m in rest["items"]] == ids[::-1][2:], "no repeat, no skip"
    assert rest["next_cursor"] is None and rest["total"] == 6
    assert walk(client, "/memories", tenant, 4)[0]["id"] == newer

    facts = walk(client, "/facts", tenant, 3)
    assert len(facts) == len({f["id"] for f in facts}) >= 6
    by_offset = ok(
        client.get("/facts", params={"limit": 2, "offset": 2}, headers=as_tenant(tenant))
    )
    assert [f["id"] for f in by_offset["items"]] == [f["id"] for f in facts[2:4]]
    assert by_offset["next_offset"] == 4


def test_contradictions_jobs_audit_keys_page_by_cursor(client: httpx.Client, db: Database) -> None:
    tenant = "paging-more"
    for name, before, after in (
        ("Alice", "lives in Paris", "moved to Berlin"),
        ("Bruno", "lives in Rome", "moved to Madrid"),
        ("Carla", "lives in Oslo", "moved to Dublin"),
    ):
        commit(client, tenant, f"{name} {before}", occurred_at="2021-03-01")
        commit(client, tenant, f"{name} {after}", occurred_at="2024-06-01")
    contradictions = walk(client, "/contradictions", tenant, 2)
    assert len(contradictions) == 3 and [c["id"] for c in contradictions] == sorted(
        (c["id"] for c in contradictions), reverse=True
    )
    page = ok(client.get("/contradictions", params={"limit": 2}, headers=as_tenant(tenant)))
    assert page["contradictions"] == page["items"]  # the old name, kept

    jobs = walk(client, "/jobs", tenant, 4)
    counts = ok(client.get("/jobs", headers=as_tenant(tenant)))["counts"]
    assert len(jobs) == len({job["id"] for job in jobs}) == sum(counts.values()) >= 6

    keys_tenant = "paging-keys"
    made = [create_key(db, KeyIn(tenant=keys_tenant, name=f"k{n}")).prefix for n in range(3)]
    listed = walk(client, "/keys", keys_tenant, 1)
    assert [key["prefix"] for key in listed] == made

    for _ in range(3):
        ok(client.get("/jobs", headers=as_tenant(keys_tenant)))  # admin requests: audited
    entries = walk(client, "/audit", keys_tenant, 2)
    assert len(entries) == len({entry["id"] for entry in entries}) >= 6
    offset_page = ok(
        client.get("/audit", params={"limit": 2, "offset": 1}, headers=as_tenant(keys_tenant))
    )
    assert len(offset_page["items"]) == 2 and offset_page["offset"] == 1
    assert offset_page["entries"] == offset_page["items"]  # the old name, kept


def test_graph_entities_page_by_cursor_stable_under_inserts(client: httpx.Client) -> None:
    tenant = "paging-graph"
    names = ["Berg", "Dorf", "Fluss", "Hafen", "Insel", "Kap"]
    ok(
        client.post(
            "/graph/entities",
            json={"entities": [{"name": name, "entity_type": "place"} for name in names]},
            headers=as_tenant(tenant),
        )
    )
    assert [e["name"] for e in walk(client, "/graph/entities", tenant, 2)] == names
    first = ok(client.get("/graph/entities", params={"limit": 2}, headers=as_tenant(tenant)))
    assert [e["name"] for e in first["items"]] == ["Berg", "Dorf"]
    assert first["entities"] == first["items"] and first["next_offset"] == 2
    # Entities added before the cursor's position (and one deleted) move no row of the next page.
    ok(
        client.post(
            "/graph/entities",
            json={"entities": [{"name": n, "entity_type": "place"} for n in ("Alm", "Au", "Bach")]},
            headers=as_tenant(tenant),
        )
    )
    ok(client.post("/graph/entities/delete", json={"names": ["Berg"]}, headers=as_tenant(tenant)))
    second = ok(
        client.get(
            "/graph/entities",
            params={"limit": 2, "cursor": first["next_cursor"]},
            headers=as_tenant(tenant),
        )
    )
    assert [e["name"] for e in second["items"]] == ["Fluss", "Hafen"]
    assert second["next_offset"] is None and second["next_cursor"]
    rest = ok(
        client.get(
            "/graph/entities",
            params={"limit": 5, "cursor": second["next_cursor"]},
            headers=as_tenant(tenant),
        )
    )
    assert [e["name"] for e in rest["items"]] == ["Insel", "Kap"] and rest["next_cursor"] is None


@pytest.mark.parametrize(
    "path",
    ["/memories", "/facts", "/contradictions", "/jobs", "/audit", "/keys", "/graph/entities"],
)
def test_a_bad_cursor_is_a_422_naming_cursor(client: httpx.Client, path: str) -> None:
    headers = as_tenant("paging")
    foreign = paging.encode("elsewhere", (1,))
    forged = base64.urlsafe_b64encode(b'["memories","yesterday","x"]').decode().rstrip("=")
    for cursor in ("garbage!", "e30", foreign, forged, "x" * 1001):
        response = client.get(path, params={"cursor": cursor}, headers=headers)
        assert response.status_code == 422, (path, cursor, response.text)
        body = response.json()
        assert body["error"] == "invalid_input" and "cursor" in body["message"], body
    if path in ("/memories", "/facts", "/audit", "/graph/entities"):
        good = paging.encode(
            path.strip("/").replace("graph/entities", "graph_entities"), _sample_key(path)
        )
        both = client.get(path, params={"cursor": good, "offset": 1}, headers=headers)
        field_error(both, "cursor")


def _sample_key(path: str) -> tuple[Any, ...]:
    now = datetime.now(UTC)
    return {
        "/memories": (now, uuid4()),
        "/facts": (now, uuid4()),
        "/audit": (now, 1),
        "/graph/entities": ("kap", 2),
    }[path]


def test_cursor_round_trip() -> None:
    moment = datetime(2026, 12, 1, 15, 7, 31, 123456, tzinfo=UTC)
    row = uuid4()
    cursor = paging.encode("memories", (moment, row))
    assert re.fullmatch(r"[A-Za-z0-9_-]+", cursor)
    assert paging.decode("memories", cursor, (datetime, type(row))) == (moment, row)


# ------------------------------------------------------------------ updating a memory


def test_patch_memory_changes_importance_source_metadata(
    client: httpx.Client, db: Database
) -> None:
    tenant = "patching"
    headers = as_tenant(tenant)
    memory_id = commit(
        client, tenant, "Lena tunes pianos in Salzburg on Tuesdays", metadata={"a": 1, "b": 2}
    )
    patched = ok(
        client.patch(
            f"/memories/{memory_id}",
            json={"importance": 80, "source": "crm", "metadata": {"b": None, "c": {"d": 3}}},
            headers=headers,
        )
    )
    assert patched["importance"] == 80 and patched["source"] == "crm"
    assert patched["metadata"] == {"a": 1, "c": {"d": 3}}
    assert ok(client.get(f"/memories/{memory_id}", headers=headers)) == patched
    facts = ok(client.get("/facts", params={"memory_id": memory_id}, headers=headers))["items"]
    assert facts and {fact["source"] for fact in facts} == {"crm"}, "its facts follow"

    same_text = client.patch(
        f"/memories/{memory_id}",
        json={"text": "Lena tunes pianos in Salzburg on Tuesdays", "importance": 70},
        headers=headers,
    )
    assert ok(same_text)["importance"] == 70
    refused = field_error(
        client.patch(
            f"/memories/{memory_id}",
            json={"text": "Lena tunes pianos in Graz", "importance": 10},
            headers=headers,
        ),
        "text",
    )
    assert "POST /commit" in refused["message"]
    unchanged = ok(client.get(f"/memories/{memory_id}", headers=headers))
    assert unchanged["text"] == "Lena tunes pianos in Salzburg on Tuesdays"
    assert unchanged["importance"] == 70, "a refused patch changes nothing"

    for body, key in (
        ({"importance": 101}, "importance"),
        ({"source": ""}, "source"),
        ({"metadata": "x"}, "metadata"),
        ({"colour": "red"}, "colour"),
    ):
        response = client.patch(f"/memories/{memory_id}", json=body, headers=headers)
        assert response.status_code == 422 and key in response.json()["message"], response.text
    assert client.patch(f"/memories/{memory_id}", json={}, headers=headers).status_code == 422
    missing = client.patch(f"/memories/{uuid4()}", json={"importance": 5}, headers=headers)
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"
    other_tenant = client.patch(
        f"/memories/{memory_id}", json={"importance": 5}, headers=as_tenant("someone-else")
    )
    assert other_tenant.status_code == 404
    reader = create_key(db, KeyIn(tenant=tenant, scopes=["read"])).key
    forbidden = client.patch(
        f"/memories/{memory_id}",
        json={"importance": 5},
        headers={"Authorization": f"Bearer {reader}"},
    )
    assert forbidden.status_code == 403 and forbidden.json()["error"] == "forbidden"
