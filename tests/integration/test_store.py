"""The key-value store of agent memories (PUT /store/items, ...) on the real API and
database: a put on an existing key is a new version that supersedes the old one (kept
as history, skipped by search, its facts closed), search is the hybrid search over the
items with filters on the value, and bad input is refused whole."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from app.services.runtime import Elephant
from tests.conftest import api_client, count_rows

TENANT = "store_t"


@pytest.fixture(scope="module")
def http(settings: Any, elephant: Elephant) -> Iterator[TestClient]:  # type: ignore[type-arg]
    with api_client(settings, elephant) as client:
        client.headers["X-Elephant-Tenant"] = TENANT
        yield client


def put(
    http: TestClient, namespace: list[str], key: str, value: dict[str, Any], **extra: Any
) -> dict[str, Any]:  # type: ignore[type-arg]
    response = http.put(
        "/store/items",
        json={"namespace": namespace, "key": key, "value": value, **extra},
        params={"wait": "true"},
    )
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def get(http: TestClient, namespace: str, key: str) -> Any:  # type: ignore[type-arg]
    return http.get("/store/items", params={"namespace": namespace, "key": key})


def test_put_then_get_round_trips_the_value(http: TestClient) -> None:  # type: ignore[type-arg]
    value = {"content": "Ada prefers tea over coffee", "tags": ["drinks"], "n": 3}
    written = put(http, ["users", "ada", "prefs"], "drink", value)
    assert written["replaced"] is None
    found = get(http, "users.ada.prefs", "drink")
    assert found.status_code == 200
    item = found.json()
    assert item["value"] == value
    assert item["namespace"] == ["users", "ada", "prefs"]
    assert item["created_at"] == item["updated_at"]
    assert item["memory_id"] == written["item"]["memory_id"]


def test_a_put_on_an_existing_key_supersedes_and_keeps_history(
    http: TestClient,
    elephant: Elephant,  # type: ignore[type-arg]
) -> None:
    first = put(http, ["users", "bo"], "city", {"content": "Bo lives in Lisbon"})
    second = put(http, ["users", "bo"], "city", {"content": "Bo lives in Oslo"})
    assert second["replaced"] == first["item"]["memory_id"]
    current = get(http, "users.bo", "city").json()
    assert current["value"] == {"content": "Bo lives in Oslo"}
    assert current["created_at"] == first["item"]["created_at"]  # the item's first put
    assert current["updated_at"] > current["created_at"]
    history = http.get(
        "/store/items/history", params={"namespace": "users.bo", "key": "city"}
    ).json()["versions"]
    assert [v["value"]["content"] for v in history] == ["Bo lives in Lisbon", "Bo lives in Oslo"]
    assert history[0]["superseded_by"] == second["item"]["memory_id"]
    assert history[1]["superseded_at"] is None
    # search sees only the current version, through the store and through /search
    hits = http.post(
        "/store/search", json={"namespace_prefix": ["users", "bo"], "query": "where does Bo live"}
    ).json()["items"]
    assert [h["value"]["content"] for h in hits] == ["Bo lives in Oslo"]
    texts = [h["text"] for h in http.post("/search", json={"query": "Bo lives"}).json()["results"]]
    assert "Bo lives in Lisbon" not in texts
    assert any("Oslo" in text for text in texts)
    # the old version's facts are closed in time, not deleted
    facts = http.get("/facts", params={"memory_id": first["item"]["memory_id"]}).json()
    old_facts = facts.get("items", facts.get("facts", []))
    assert old_facts, facts
    assert all(f["status"] == "superseded" and f["valid_to"] is not None for f in old_facts)
    with_expired = http.post(
        "/search",
        json={"query": "Bo lives in Lisbon", "filters": {"include_expired": True}},
    ).json()["results"]
    assert any("Lisbon" in hit["text"] for hit in with_expired)
    assert count_rows(elephant.db, TENANT, "memories WHERE item_key = 'city'") == 2


def test_delete_closes_the_item_and_keeps_its_history(http: TestClient) -> None:  # type: ignore[type-arg]
    put(http, ["users", "cy"], "pet", {"content": "Cy has a parrot named Kiwi"})
    gone = http.delete("/store/items", params={"namespace": "users.cy", "key": "pet"})
    assert gone.status_code == 200 and gone.json()["deleted"] is True
    assert get(http, "users.cy", "pet").status_code == 404
    again = http.delete("/store/items", params={"namespace": "users.cy", "key": "pet"})
    assert again.json() == {"deleted": False, "memory_id": None}
    history = http.get("/store/items/history", params={"namespace": "users.cy", "key": "pet"})
    assert len(history.json()["versions"]) == 1
    hits = http.post("/store/search", json={"query": "parrot named Kiwi"}).json()["items"]
    assert hits, "the other items still answer"
    assert all("Kiwi" not in str(hit["value"]) for hit in hits)
    # put again after a delete: a new item, created now
    back = put(http, ["users", "cy"], "pet", {"content": "Cy has a cat"})
    assert back["replaced"] is None


def test_search_filters_on_the_value_and_the_namespace(http: TestClient) -> None:  # type: ignore[type-arg]
    put(
        http,
        ["docs", "team1"],
        "a",
        {"text": "The deploy runbook for the billing service", "status": "draft"},
    )
    put(
        http,
        ["docs", "team1"],
        "b",
        {"text": "The deploy runbook for the search service", "status": "final"},
    )
    put(
        http,
        ["docs", "team2"],
        "c",
        {"text": "The deploy runbook for the mail service", "status": "final"},
    )
    finals = http.post(
        "/store/search",
        json={
            "namespace_prefix": ["docs"],
            "query": "deploy runbook",
            "filter": {"status": "final"},
        },
    ).json()["items"]
    assert sorted(i["key"] for i in finals) == ["b", "c"]
    assert all(isinstance(i["score"], float) for i in finals)
    team1 = http.post(
        "/store/search", json={"namespace_prefix": ["docs", "team1"], "query": "deploy runbook"}
    ).json()["items"]
    assert sorted(i["key"] for i in team1) == ["a", "b"]
    # a prefix is whole labels: docs.team matches neither docs.team1 nor docs.team2
    assert http.post("/store/search", json={"namespace_prefix": ["docs", "team"]}).json() == {
        "items": []
    }
    newest = http.post("/store/search", json={"namespace_prefix": ["docs"], "limit": 2}).json()[
        "items"
    ]
    assert [i["key"] for i in newest] == ["c", "b"]
    paged = http.post(
        "/store/search", json={"namespace_prefix": ["docs"], "limit": 2, "offset": 2}
    ).json()["items"]
    assert [i["key"] for i in paged] == ["a"]


def test_namespaces_match_prefix_suffix_and_depth(http: TestClient) -> None:  # type: ignore[type-arg]
    put(http, ["ns", "a", "x"], "k", {"v": "one"})
    put(http, ["ns", "b", "x"], "k", {"v": "two"})
    put(http, ["ns", "b", "y"], "k", {"v": "three"})

    def names(**query: Any) -> list[list[str]]:
        response = http.post("/store/namespaces", json=query)
        assert response.status_code == 200, response.text
        return response.json()["namespaces"]  # type: ignore[no-any-return]

    assert names(prefix=["ns"]) == [["ns", "a", "x"], ["ns", "b", "x"], ["ns", "b", "y"]]
    assert names(prefix=["ns", "*", "x"]) == [["ns", "a", "x"], ["ns", "b", "x"]]
    assert names(prefix=["ns"], suffix=["y"]) == [["ns", "b", "y"]]
    assert names(prefix=["ns"], max_depth=2) == [["ns", "a"], ["ns", "b"]]
    assert names(prefix=["ns"], limit=1, offset=1) == [["ns", "b", "x"]]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"namespace": ["a.b"], "key": "k", "value": {}}, "cannot contain '.'"),
        ({"namespace": [], "key": "k", "value": {}}, "namespace"),
        ({"namespace": ["a"], "key": "", "value": {}}, "key"),
        ({"namespace": ["a"], "key": "k", "value": [1, 2]}, "value"),
        ({"namespace": ["a"], "key": "k"}, "value"),
    ],
)
def test_bad_items_are_refused_whole(
    http: TestClient, elephant: Elephant, body: dict[str, Any], says: str
) -> None:  # type: ignore[type-arg]
    before = count_rows(elephant.db, TENANT, "memories")
    response = http.put("/store/items", json=body)
    assert 400 <= response.status_code < 500, response.text
    assert says in response.text
    assert count_rows(elephant.db, TENANT, "memories") == before


def test_items_are_per_tenant(http: TestClient) -> None:  # type: ignore[type-arg]
    put(http, ["private"], "secret", {"content": "the vault code is 4321"})
    other = {"X-Elephant-Tenant": "store_other"}
    assert (
        http.get(
            "/store/items", params={"namespace": "private", "key": "secret"}, headers=other
        ).status_code
        == 404
    )
    hits = http.post("/store/search", json={"query": "vault code"}, headers=other).json()["items"]
    assert hits == []


def test_concurrent_puts_of_one_key_leave_one_current_version(
    http: TestClient,
    elephant: Elephant,  # type: ignore[type-arg]
) -> None:
    """Eight writers at once on one key: each put is a version, exactly one is current,
    and the history chains them in order (the advisory lock serialises them)."""
    from concurrent.futures import ThreadPoolExecutor

    from app.services.store.items import put_item
    from app.services.store.schemas import ItemIn

    def one(n: int) -> str:
        item = ItemIn(namespace=["race"], key="k", value={"content": f"value number {n}"})
        return put_item(elephant, TENANT, item).item.memory_id

    with ThreadPoolExecutor(max_workers=8) as pool:
        written = list(pool.map(one, range(8)))
    versions = http.get("/store/items/history", params={"namespace": "race", "key": "k"}).json()[
        "versions"
    ]
    assert sorted(v["memory_id"] for v in versions) == sorted(written)
    assert sum(v["superseded_at"] is None for v in versions) == 1
    assert [v["superseded_by"] for v in versions[:-1]] == [v["memory_id"] for v in versions[1:]]
    assert get(http, "race", "k").json()["memory_id"] == versions[-1]["memory_id"]


def test_items_and_their_history_survive_export_and_import(
    http: TestClient,  # type: ignore[type-arg]
    elephant: Elephant,
    tmp_path: Any,
    pg_data_dir: Any,
    new_database: Any,
    embedder: Any,
) -> None:
    from app.db import Database
    from app.services.transfer.export import export_to_path
    from app.services.transfer.importer import import_tenant
    from tests.conftest import make_settings

    tenant = "store_export"
    headers = {"X-Elephant-Tenant": tenant}
    for value in ("Eve works at Acme", "Eve works at Globex"):
        body = {"namespace": ["people", "eve"], "key": "job", "value": {"content": value}}
        # no wait: no fact, no entity, so the tenant has no graph yet (export must cope)
        assert http.put("/store/items", json=body, headers=headers).status_code == 200
    path = tmp_path / "store.jsonl.gz"
    export_to_path(elephant, tenant, path, vectors=True)
    settings = make_settings(pg_data_dir, embedded={"database": new_database("store_import")})
    db = Database(settings)
    db.open()
    other = Elephant(settings=settings, db=db, embedder=embedder, llm=None)
    try:
        import_tenant(other, path)
        from app.services.store.items import get_item, item_history
        from app.services.store.schemas import ItemRef

        ref = ItemRef(namespace=["people", "eve"], key="job")
        assert get_item(other, tenant, ref).value == {"content": "Eve works at Globex"}
        history = item_history(other, tenant, ref).versions
        assert [v.value["content"] for v in history] == ["Eve works at Acme", "Eve works at Globex"]
        assert history[0].superseded_by == history[1].memory_id
    finally:
        other.close_providers()
        db.close()
