"""The knowledge-graph endpoints over HTTP (Litestar TestClient), real database and embedder,
on both graph backends (tests/graph_backends.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from app.config import Settings
from app.services.runtime import Elephant
from tests.conftest import api_client
from tests.graph_backends import (
    graph_backend_fixture,  # noqa: F401 (the module runs on both graph backends)
    settings_fixture,  # noqa: F401
)

Client = TestClient  # type: ignore[type-arg]


@pytest.fixture(scope="module")
def client(settings: Settings, elephant: Elephant) -> Iterator[Client]:
    with api_client(settings, elephant) as test_client:
        yield test_client


def post(client: Client, path: str, body: Any, tenant: str) -> Any:
    return client.post(path, json=body, headers={"X-Elephant-Tenant": tenant})


def get(client: Client, path: str, tenant: str, **params: Any) -> Any:
    return client.get(path, params=params, headers={"X-Elephant-Tenant": tenant})


def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def snapshot(client: Client, tenant: str) -> Any:
    return ok(get(client, "/graph/entities", tenant, summary="false", limit=200))


RECORD = {
    "entities": [
        {
            "name": "Elephant",
            "entity_type": "artifact",
            "domain": "software",
            "observations": ["Stores memories in Postgres"],
        },
        {"name": "pgvector", "entity_type": "product", "domain": "software"},
        {"name": "Postgres", "entity_type": "artifact", "domain": "software"},
    ],
    "relations": [
        {"source": "Elephant", "relation_type": "requires", "target": "pgvector"},
        {"source": "pgvector", "relation_type": "part of", "target": "Postgres"},
    ],
    "observations": [
        {"entity": "Postgres", "contents": [{"content": "Version 18", "kind": "note"}]}
    ],
}


def test_record_open_search_read_and_neighbourhood(client: Client) -> None:
    tenant = "api-graph"
    result = ok(post(client, "/graph/record", RECORD, tenant), 201)
    assert result["entities_created"] == ["Elephant", "pgvector", "Postgres"]
    assert (result["relations_created"], result["observations_added"]) == (2, 2)

    opened = ok(post(client, "/graph/open", {"names": ["ELEPHANT", "Nobody"]}, tenant))
    assert opened["missing"] == ["Nobody"]
    node = opened["entities"][0]
    assert node["entity_type"] == "artifact"
    assert [o["content"] for o in node["observations"]] == ["Stores memories in Postgres"]
    assert [(r["relation_type"], r["target"]) for r in node["relations"]] == [
        ("depends_on", "pgvector")
    ]

    found = ok(get(client, "/graph/search", tenant, q="pgvector", max_relations=1))
    assert found["total_matched"] == 1 and found["truncated"] is False
    hit = found["entities"][0]
    assert hit["name"] == "pgvector"
    assert (len(hit["relations"]), hit["relations_total"], hit["relations_truncated"]) == (
        1,
        2,
        True,
    )
    filtered = ok(get(client, "/graph/search", tenant, q="pgvector", entity_type="person"))
    assert filtered["total_matched"] == 0

    page = ok(get(client, "/graph/entities", tenant, limit=2))
    assert [e["name"] for e in page["entities"]] == ["Elephant", "pgvector"]
    assert (page["total"], page["next_offset"]) == (3, 2)
    assert page["entities"][0] == {
        "name": "Elephant",
        "entity_type": "artifact",
        "domain": "software",
        "epistemic": "unknown",
        "observations": 1,
        "relations": 1,
    }
    rest = ok(get(client, "/graph/entities", tenant, offset=2, limit=2, summary="false"))
    assert [e["name"] for e in rest["entities"]] == ["Postgres"] and rest["next_offset"] is None
    assert rest["entities"][0]["observations"][0]["content"] == "Version 18"

    one = ok(get(client, "/graph", tenant, q="elephant", hops=1))
    two = ok(get(client, "/graph", tenant, q="elephant", hops=2))
    assert {n["name"] for n in one["nodes"]} == {"Elephant", "pgvector"}
    assert {n["name"] for n in two["nodes"]} == {"Elephant", "pgvector", "Postgres"}
    assert (len(one["edges"]), len(two["edges"])) == (1, 2)
    assert len(ok(get(client, "/graph", tenant))["nodes"]) == 3


@pytest.mark.parametrize("hops", [0, 4, "two"])
def test_bad_hops_are_422(client: Client, hops: Any) -> None:
    response = get(client, "/graph", "api-graph", q="elephant", hops=hops)
    assert response.status_code == 422, response.text
    assert "hops" in response.json()["message"]


@pytest.mark.parametrize(
    ("path", "params", "fragment"),
    [
        ("/graph/search", {}, "q"),
        ("/graph/search", {"q": "x", "limit": 0}, "limit"),
        ("/graph/search", {"q": "x", "domain": "astrology"}, "unknown domain 'astrology'"),
        ("/graph/search", {"q": "x", "entity_type": "wizard"}, "unknown entity type 'wizard'"),
        ("/graph/entities", {"offset": -1}, "offset"),
        ("/graph/entities", {"limit": 500}, "limit"),
        ("/graph", {"limit": 0}, "limit"),
    ],
)
def test_bad_read_parameters_are_422(
    client: Client, path: str, params: dict[str, Any], fragment: str
) -> None:
    response = get(client, path, "api-graph", **params)
    assert response.status_code == 422, response.text
    assert fragment in response.json()["message"]


@pytest.mark.parametrize(
    ("path", "body", "fragment"),
    [
        (
            "/graph/record",
            {
                "entities": [{"name": "Fresh"}],
                "relations": [{"source": "Fresh", "relation_type": "adores", "target": "Base"}],
            },
            "unknown relation type 'adores': use one of supports, contradicts",
        ),
        (
            "/graph/record",
            {"entities": [{"name": "Fresh"}, {"name": "Other", "domain": "astrology"}]},
            "unknown domain 'astrology'",
        ),
        (
            "/graph/record",
            {
                "entities": [{"name": "Fresh", "observations": ["hello"]}],
                "relations": [{"source": "Fresh", "relation_type": "uses", "target": "Ghost"}],
            },
            "unknown entities: ghost",
        ),
        ("/graph/record", {}, "at least one entity"),
        ("/graph/record", {"entities": [{"name": "Fresh", "colour": "red"}]}, "colour"),
        ("/graph/entities", {"entities": []}, "entities"),
        ("/graph/relations", {"relations": [{"source": "Base"}]}, "relation_type"),
        (
            "/graph/observations",
            {"observations": [{"entity": "Ghost", "contents": ["x"]}]},
            "ghost",
        ),
        ("/graph/decisions", {"name": "D", "decided": "x"}, "because"),
        ("/graph/revise", {"entity": "Base", "superseded_by": "Base"}, "cannot supersede itself"),
        ("/graph/open", {"names": []}, "names"),
    ],
)
def test_bad_writes_are_422_and_write_nothing(
    client: Client, path: str, body: dict[str, Any], fragment: str
) -> None:
    tenant = "api-bad"
    ok(
        post(
            client, "/graph/record", {"entities": [{"name": "Base", "observations": ["b"]}]}, tenant
        ),
        201,
    )
    before = snapshot(client, tenant)
    response = post(client, path, body, tenant)
    assert response.status_code == 422, response.text
    assert fragment in response.json()["message"]
    assert snapshot(client, tenant) == before


def test_decision_revise_invalidate_and_delete(client: Client) -> None:
    tenant = "api-lifecycle"
    first = {
        "name": "Queue v1",
        "domain": "software",
        "decided": "Use Redis for jobs",
        "because": "It is fast",
        "rejected": ["Kafka: too heavy", "SQS: vendor lock-in"],
    }
    ok(post(client, "/graph/decisions", first, tenant), 201)
    node = ok(post(client, "/graph/open", {"names": ["Queue v1"]}, tenant))["entities"][0]
    assert [(o["kind"], o["content"]) for o in node["observations"]] == [
        ("decided", "Use Redis for jobs"),
        ("because", "It is fast"),
        ("rejected", "Kafka: too heavy"),
        ("rejected", "SQS: vendor lock-in"),
    ]
    second = {
        "name": "Queue v2",
        "decided": "Use Postgres SKIP LOCKED",
        "because": "One system fewer",
        "supersedes": "Queue v1",
    }
    ok(post(client, "/graph/decisions", second, tenant), 201)
    old, new = ok(post(client, "/graph/open", {"names": ["Queue v1", "Queue v2"]}, tenant))[
        "entities"
    ]
    assert old["valid_to"] is not None and old["observations"] == []
    assert [(r["relation_type"], r["target"]) for r in new["relations"]] == [
        ("supersedes", "Queue v1")
    ]

    # A failing revise (unknown observation) changes nothing, a good one closes and links.
    before = snapshot(client, tenant)
    bad = post(
        client,
        "/graph/revise",
        {
            "entity": "Queue v2",
            "superseded_by": "Queue v3",
            "observations": ["Use MongoDB"],
            "superseding_entity": {"name": "Queue v3", "entity_type": "decision"},
        },
        tenant,
    )
    assert bad.status_code == 422 and "Use MongoDB" in bad.json()["message"]
    assert snapshot(client, tenant) == before
    revised = ok(
        post(
            client,
            "/graph/revise",
            {
                "entity": "Queue v2",
                "superseded_by": "Queue v3",
                "observations": ["One system fewer"],
                "superseding_entity": {"name": "Queue v3", "observations": ["Use pgmq"]},
            },
            tenant,
        )
    )
    assert revised["observations_invalidated"] == 1
    assert revised["entities_created"] == ["Queue v3"]

    ok(post(client, "/graph/entities", {"entities": [{"name": "Ops team"}]}, tenant), 201)
    ok(
        post(
            client,
            "/graph/relations",
            {"relations": [{"source": "Ops team", "relation_type": "uses", "target": "Queue v3"}]},
            tenant,
        ),
        201,
    )
    added = ok(
        post(
            client,
            "/graph/observations",
            {"observations": [{"entity": "Ops team", "contents": ["On call", "Based in Oslo"]}]},
            tenant,
        ),
        201,
    )
    assert added["observations_added"] == 2
    invalidated = ok(
        post(
            client,
            "/graph/observations/invalidate",
            {
                "observations": [{"entity": "ops team", "observations": ["based in oslo"]}],
                "reason": "moved",
            },
            tenant,
        )
    )
    assert invalidated == {"observations_invalidated": 1}
    deleted = ok(
        post(
            client,
            "/graph/observations/delete",
            {"observations": [{"entity": "Ops team", "observations": ["On call"]}]},
            tenant,
        )
    )
    assert deleted == {"observations_deleted": 1}
    ops_team = ok(post(client, "/graph/open", {"names": ["Ops team"]}, tenant))["entities"][0]
    assert ops_team["observations"] == [] and ops_team["relations_total"] == 1
    gone = ok(
        post(
            client,
            "/graph/relations/delete",
            {"relations": [{"source": "Ops team", "relation_type": "uses", "target": "Queue v3"}]},
            tenant,
        )
    )
    assert gone == {"relations_deleted": 1}
    removed = ok(post(client, "/graph/entities/delete", {"names": ["Ops team", "Nope"]}, tenant))
    assert removed == {"entities_deleted": 1, "missing": ["Nope"]}
    names = [e["name"] for e in snapshot(client, tenant)["entities"]]
    assert names == ["Queue v1", "Queue v2", "Queue v3"]


def test_tenant_header_scopes_the_graph(client: Client) -> None:
    ok(
        post(
            client,
            "/graph/record",
            {"entities": [{"name": "Hidden thing", "observations": ["Only for A"]}]},
            "api-iso-a",
        ),
        201,
    )
    ok(post(client, "/graph/record", {"entities": [{"name": "Visible"}]}, "api-iso-b"), 201)
    b = "api-iso-b"
    assert ok(get(client, "/graph/search", b, q="hidden thing"))["total_matched"] == 0
    assert ok(post(client, "/graph/open", {"names": ["Hidden thing"]}, b))["entities"] == []
    assert [e["name"] for e in snapshot(client, b)["entities"]] == ["Visible"]
    assert ok(get(client, "/graph", b, q="hidden thing"))["nodes"] == []
    assert ok(get(client, "/graph/search", "api-iso-a", q="hidden thing"))["total_matched"] == 1
    bad = post(client, "/graph/record", {"entities": [{"name": "x"}]}, "Not A Tenant!")
    assert bad.status_code == 422 and "X-Elephant-Tenant" in bad.json()["message"]


def test_disabled_graph_answers_503(settings: Settings, elephant: Elephant) -> None:
    off = settings.model_copy(
        update={"graph": settings.graph.model_copy(update={"enabled": False})}
    )
    runtime = Elephant(settings=off, db=elephant.db, embedder=elephant.embedder, llm=None)
    try:
        with api_client(off, runtime) as disabled:
            response = post(disabled, "/graph/record", {"entities": [{"name": "x"}]}, "api-off")
            assert response.status_code == 503, response.text
            body = response.json()
            assert body["error"] == "capability_missing" and "graph.enabled" in body["message"]
            assert get(disabled, "/graph/search", "api-off", q="x").status_code == 503
    finally:
        runtime.close_providers()


def test_invalidate_relations_and_open_as_of_over_http(client: Client) -> None:
    tenant = "api-as-of"
    ok(
        post(
            client,
            "/graph/record",
            {
                "entities": [{"name": "Search"}, {"name": "Solr"}],
                "relations": [{"source": "Search", "relation_type": "uses", "target": "Solr"}],
            },
            tenant,
        ),
        201,
    )
    opened = ok(post(client, "/graph/open", {"names": ["Search"]}, tenant))
    stamp = opened["entities"][0]["relations"][0]["valid_from"]
    body = {"relations": [{"source": "Search", "relation_type": "uses", "target": "Solr"}]}
    assert ok(post(client, "/graph/relations/invalidate", body, tenant)) == {
        "relations_invalidated": 1
    }
    refused = post(client, "/graph/relations/invalidate", body, tenant)
    assert refused.status_code == 422 and "no current relation" in refused.json()["message"]
    now = ok(post(client, "/graph/open", {"names": ["Search"]}, tenant))
    assert now["entities"][0]["relations"] == []
    then = ok(post(client, "/graph/open", {"names": ["Search"], "as_of": stamp}, tenant))
    assert then["entities"][0]["relations"][0]["target"] == "Solr"
    bad = post(client, "/graph/open", {"names": ["Search"], "as_of": "not a date"}, tenant)
    assert bad.status_code == 422 and "as_of" in bad.text
