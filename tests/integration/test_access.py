"""Access control over REST, tried as an attacker would: no key, another tenant's key, a
missing scope, a cross-site form, a rebinding Host, a flood; and the key lifecycle."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from litestar.testing import TestClient

from app.api import create_app
from app.cli import main
from app.config import Settings
from app.db import Database
from app.services.access import audit
from app.services.access.keys import KeyIn, create_key, list_keys, revoke_key
from app.services.runtime import Elephant
from app.web.route_access import route_access
from tests.conftest import count_rows, make_settings

Client = TestClient  # type: ignore[type-arg]
SECRET = "The launch code for Acme's rocket is 7-4-1-9"


def key_for(db: Database, tenant: str | None, *scopes: str, **extra: Any) -> str:
    request = KeyIn(tenant=tenant, all_tenants=tenant is None, scopes=list(scopes), **extra)
    return create_key(db, request).key


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def keys(db: Database) -> dict[str, str]:
    return {
        "acme_rw": key_for(db, "acme", "read", "write"),
        "acme_read": key_for(db, "acme", "read"),
        "acme_write": key_for(db, "acme", "write"),
        "acme_admin": key_for(db, "acme", "read", "write", "admin"),
        "beta_rw": key_for(db, "beta", "read", "write"),
        "operator": key_for(db, None, "read", "write", "admin"),
    }


@pytest.fixture(scope="module")
def client(settings: Settings, elephant: Elephant, keys: dict[str, str]) -> Iterator[Client]:
    """The API in its default mode, no key preset: each test says which key it sends."""
    with TestClient(app=create_app(settings, elephant), base_url="http://127.0.0.1:7777") as c:
        response = c.post(
            "/commit", json={"text": SECRET, "force": True}, headers=bearer(keys["acme_rw"])
        )
        assert response.status_code == 201, response.text
        yield c


# ------------------------------------------------------------------ the attacks of the issue


def test_reading_another_tenant_by_header_is_refused(client: Client, keys: dict[str, str]) -> None:
    params = {"q": "launch code"}
    anonymous = client.get("/search", params=params, headers={"X-Elephant-Tenant": "acme"})
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"].startswith("Bearer")
    foreign = client.get(
        "/search", params=params, headers={**bearer(keys["beta_rw"]), "X-Elephant-Tenant": "acme"}
    )
    assert foreign.status_code == 403 and "launch" not in foreign.text
    # the refusal is the same whether the tenant exists or not: no hint of who is there
    ghost = client.get(
        "/search", params=params, headers={**bearer(keys["beta_rw"]), "X-Elephant-Tenant": "ghost"}
    )
    assert ghost.status_code == 403
    assert ghost.json()["message"].replace("ghost", "acme") == foreign.json()["message"]
    own = client.get("/search", params=params, headers=bearer(keys["beta_rw"]))
    assert own.status_code == 200 and own.json()["results"] == []
    mine = client.get("/search", params=params, headers=bearer(keys["acme_rw"]))
    assert SECRET in mine.json()["results"][0]["text"]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("PUT", "/amac/threshold", {"threshold": 9.5}),
        ("POST", "/graph/entities/delete", {"names": ["Rocket"]}),
        ("GET", "/jobs", None),
        ("GET", "/amac/metrics", None),
    ],
)
def test_the_open_endpoints_of_the_issue_need_a_key(
    client: Client, method: str, path: str, body: Any
) -> None:
    headers = {"X-Elephant-Tenant": "acme"}
    response = client.request(method, path, json=body, headers=headers)
    assert response.status_code == 401, (path, response.text)


def test_a_wrong_key_and_an_unknown_key_get_the_same_answer(
    client: Client, keys: dict[str, str]
) -> None:
    real = keys["acme_rw"]
    prefix = real.split("_")[1]
    wrong_secret = f"ek_{prefix}_{'A' * 43}"
    unknown = f"ek_{'0' * 12}_{'A' * 43}"
    answers = [
        client.get("/stats", headers=bearer(key)).json() for key in (wrong_secret, unknown, "junk")
    ]
    assert all(answer["error"] == "unauthorized" for answer in answers)
    assert answers[0] == answers[1] == answers[2]


# ------------------------------------------------------------------ scopes matrix

# Every endpoint with the scope it needs and a request that gets past validation or fails
# it after the access check (the access check always comes first).
GHOST = "00000000-0000-4000-8000-000000000000"  # an id no row has
ENDPOINTS: list[tuple[str, str, str, Any]] = [
    ("GET", "/search?q=rocket", "read", None),
    ("POST", "/search", "read", {"query": "rocket"}),
    ("GET", "/stats", "read", None),
    ("GET", "/usage", "read", None),
    ("POST", "/proactive", "read", {"messages": ["rocket launch"]}),
    ("POST", "/reflect", "read", {"q": "What is the launch code?"}),
    ("GET", "/contradictions", "read", None),
    ("GET", "/amac/metrics", "read", None),
    ("GET", "/amac/decisions", "read", None),
    ("GET", "/conversations", "read", None),
    ("GET", f"/conversations/{GHOST}", "read", None),
    ("GET", "/handoffs", "read", None),
    ("GET", f"/facts/{GHOST}/history", "read", None),
    ("GET", "/tenant/owner", "read", None),
    ("GET", "/handoff?project=nothing", "read", None),
    ("GET", "/graph/search?q=rocket", "read", None),
    ("POST", "/graph/open", "read", {"names": ["Rocket"]}),
    ("GET", "/graph/entities", "read", None),
    ("GET", "/graph", "read", None),
    ("POST", "/commit", "write", {"text": "Dana ships the Falcon build on 3 March 2025"}),
    ("POST", "/commit_conversation", "write", {"turns": [{"speaker": "Dana", "text": "Hello there"}]}),
    ("POST", "/amac/decisions/999999999/admit", "write", None),
    ("POST", "/feedback", "write", {"memory_id": str(uuid.uuid4()), "helpful": True}),
    ("POST", "/sessions/close", "write", {"project": "p", "transcript": "Dana: We chose Rust."}),
    ("POST", "/graph/record", "write", {"entities": [{"name": "Falcon"}]}),
    ("POST", "/graph/decisions", "write", {"name": "Queue", "decided": "Postgres", "because": "simple"}),
    ("POST", "/graph/revise", "write", {"entity": "Nothing", "superseded_by": "Other"}),
    ("POST", "/graph/entities", "write", {"entities": [{"name": "Falcon"}]}),
    ("POST", "/graph/relations", "write", {"relations": [{"source": "Falcon", "relation_type": "uses", "target": "Falcon"}]}),
    ("POST", "/graph/observations", "write", {"observations": [{"entity": "Falcon", "contents": ["fast"]}]}),
    ("POST", "/graph/observations/invalidate", "write", {"observations": [{"entity": "Falcon", "observations": ["fast"]}]}),
    ("POST", "/graph/relations/invalidate", "write", {"relations": [{"source": "A", "relation_type": "uses", "target": "B"}]}),
    ("PUT", "/amac/threshold", "admin", {"threshold": None}),
    ("PUT", "/tenant/owner", "admin", {"owner": None}),
    ("GET", "/jobs", "admin", None),
    ("POST", "/graph/entities/delete", "admin", {"names": ["Nobody"]}),
    ("POST", "/graph/observations/delete", "admin", {"observations": [{"entity": "Nobody", "observations": ["x"]}]}),
    ("POST", "/graph/relations/delete", "admin", {"relations": [{"source": "A", "relation_type": "uses", "target": "B"}]}),
    ("GET", "/keys", "admin", None),
    ("POST", "/keys", "admin", {"tenant": "acme", "scopes": ["read"], "name": "matrix"}),
    ("POST", f"/keys/{'0' * 12}/revoke", "admin", None),
    ("GET", "/audit", "admin", None),
    ("GET", "/analysts", "admin", None),
    ("POST", "/analysts", "admin", {"name": "Not a name", "tenants": ["acme"]}),
    ("POST", f"/analysts/{GHOST}/revoke", "admin", None),
    ("GET", "/metrics", "admin", None),
    ("GET", "/memories", "read", None),
    ("GET", f"/memories/{GHOST}", "read", None),
    ("PATCH", f"/memories/{GHOST}", "write", {"importance": 10}),
    ("GET", "/facts", "read", None),
    ("GET", f"/facts/{GHOST}", "read", None),
    ("DELETE", f"/memories/{GHOST}", "admin", None),
    ("DELETE", f"/facts/{GHOST}", "admin", None),
    ("POST", "/erase", "admin", {"subject": "Nobody At All", "dry_run": True}),
    ("PUT", "/store/items", "write", {"namespace": ["acl"], "key": "k", "value": {"v": "x"}}),
    ("GET", "/store/items?namespace=acl&key=k", "read", None),
    ("GET", "/store/items/history?namespace=acl&key=k", "read", None),
    ("POST", "/store/search", "read", {"query": "x"}),
    ("POST", "/store/namespaces", "read", {}),
    ("DELETE", "/store/items?namespace=acl&key=gone", "write", None),
]  # fmt: skip
PUBLIC_ROUTES = {("GET", "/health"), ("HEAD", "/health")}


def test_the_matrix_lists_every_route(settings: Settings, elephant: Elephant) -> None:
    app = create_app(settings, elephant)
    declared = {(method, path.split("?")[0]) for method, path, _, _ in ENDPOINTS}
    routes = set()
    for route in app.routes:
        for handler in getattr(route, "route_handlers", []):
            access = route_access(handler)
            assert access is not None
            if not access.checks_caller or access.console:
                continue  # console pages: tests/browser/test_console_access.py has their matrix
            for method in handler.http_methods:
                path = route.path.replace("{prefix:str}", "0" * 12)
                routes.add((method, path))
    samples = {"uuid": GHOST, "int": "999999999", "str": GHOST}
    routes = {(m, re.sub(r"\{\w+:(\w+)\}", lambda x: samples[x.group(1)], p)) for m, p in routes}
    missing = routes - declared
    assert not missing, f"routes missing from the scopes matrix: {sorted(missing)}"


@pytest.mark.parametrize(("method", "path", "needed", "body"), ENDPOINTS)
def test_scopes_matrix(
    client: Client, keys: dict[str, str], method: str, path: str, needed: str, body: Any
) -> None:
    holders = {"read": "acme_read", "write": "acme_write", "admin": "acme_admin"}
    statuses = {}
    for label in (None, "acme_read", "acme_write", "acme_admin"):
        headers = {} if label is None else bearer(keys[label])
        statuses[label] = client.request(method, path, json=body, headers=headers).status_code
    assert statuses[None] == 401
    for scope, label in holders.items():
        if scope == needed or (label == "acme_admin"):  # the admin key holds every scope
            assert statuses[label] not in (401, 403), (label, statuses)
        else:
            assert statuses[label] == 403, (label, statuses)


# ------------------------------------------------------------------ key lifecycle


def test_a_key_is_stored_as_a_hash_and_shown_once(db: Database) -> None:
    created = create_key(db, KeyIn(tenant="lifecycle", scopes=["read"], name="ci"))
    assert created.key.startswith(f"ek_{created.prefix}_") and len(created.key) > 50
    with db.admin_connection() as conn:
        rows = conn.execute("SELECT t::text FROM api_keys AS t").fetchall()
    assert rows and not any(created.key in row[0] for row in rows)
    secret = created.key.split("_", 2)[2]
    assert not any(secret in row[0] for row in rows)
    listed = list_keys(db, tenant="lifecycle")
    assert [info.prefix for info in listed] == [created.prefix]
    assert not hasattr(listed[0], "key") and created.key not in repr(listed)
    assert created.key not in repr(created)  # the secret stays out of logs and tracebacks


def test_revoked_and_expired_keys_stop_working(client: Client, db: Database) -> None:
    key = key_for(db, "lifecycle", "read")
    assert client.get("/stats", headers=bearer(key)).status_code == 200
    revoke_key(db, key.split("_")[1], tenant=None)
    revoked = client.get("/stats", headers=bearer(key))
    assert revoked.status_code == 401 and "revoked" in revoked.json()["message"]

    expiring = key_for(db, "lifecycle", "read", expires_in_days=1)
    assert client.get("/stats", headers=bearer(expiring)).status_code == 200
    with db.admin_connection() as conn:
        conn.execute(
            "UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE prefix = %s",
            (expiring.split("_")[1],),
        )
    expired = client.get("/stats", headers=bearer(expiring))
    assert expired.status_code == 401 and "expired" in expired.json()["message"]


def test_last_use_is_recorded_for_the_real_key_only(client: Client, db: Database) -> None:
    key = key_for(db, "lifecycle", "read")
    prefix = key.split("_")[1]

    def last_used() -> Any:
        return next(i.last_used_at for i in list_keys(db, tenant="lifecycle") if i.prefix == prefix)

    assert client.get("/stats", headers=bearer(f"ek_{prefix}_{'A' * 43}")).status_code == 401
    assert last_used() is None  # a guess at the secret is not a use
    for _ in range(3):
        assert client.get("/stats", headers=bearer(key)).status_code == 200
    assert last_used() is not None
    entries = audit.entries(db, tenant="lifecycle", limit=500)
    used = [e for e in entries if e.action == "key.used" and e.key_prefix == prefix]
    assert len(used) == 1  # one entry per key and hour


def test_key_rules_are_checked_before_anything_is_stored() -> None:
    with pytest.raises(ValueError, match="name the tenant"):
        KeyIn(scopes=["read"])
    with pytest.raises(ValueError, match="only an admin key may act for all tenants"):
        KeyIn(all_tenants=True, scopes=["read", "write"])
    with pytest.raises(ValueError, match="tenant id"):
        KeyIn(tenant="Not Valid", scopes=["read"])
    with pytest.raises(ValueError, match="scopes"):
        KeyIn(tenant="t", scopes=["root"])  # type: ignore[list-item]


def test_keys_over_http_stay_within_the_creators_reach(
    client: Client, keys: dict[str, str]
) -> None:
    admin = bearer(keys["acme_admin"])
    made = client.post(
        "/keys", json={"tenant": "acme", "scopes": ["read"], "name": "bot"}, headers=admin
    )
    assert made.status_code == 201, made.text
    new_key = made.json()["key"]
    assert client.get("/stats", headers=bearer(new_key)).status_code == 200
    for body in (
        {"tenant": "beta", "scopes": ["read"]},
        {"all_tenants": True, "scopes": ["admin"]},
    ):
        refused = client.post("/keys", json=body, headers=admin)
        assert refused.status_code == 403, refused.text
    rw = bearer(keys["acme_rw"])
    assert (
        client.post("/keys", json={"tenant": "acme", "scopes": ["read"]}, headers=rw).status_code
        == 403
    )
    listed = client.get("/keys", headers=admin).json()["keys"]
    assert {entry["tenant"] for entry in listed} == {"acme"}
    assert client.get("/keys?all_tenants=true", headers=admin).status_code == 403
    beta_prefix = keys["beta_rw"].split("_")[1]
    assert client.post(f"/keys/{beta_prefix}/revoke", headers=admin).status_code == 404
    prefix = made.json()["prefix"]
    assert client.post(f"/keys/{prefix}/revoke", headers=admin).status_code == 200
    assert client.get("/stats", headers=bearer(new_key)).status_code == 401


def test_operator_keys_name_the_tenant(client: Client, keys: dict[str, str]) -> None:
    operator = bearer(keys["operator"])
    found = client.get(
        "/search", params={"q": "launch code"}, headers={**operator, "X-Elephant-Tenant": "acme"}
    )
    assert SECRET in found.json()["results"][0]["text"]
    assert client.get("/keys?all_tenants=true", headers=operator).status_code == 200


def test_an_all_tenants_key_acts_on_the_tenant_it_names_and_says_so(
    client: Client, db: Database, settings: Settings, keys: dict[str, str]
) -> None:
    """Found by a fuzz run: an all-tenants key acting for tenant "fuzz" revoked tenant
    acme's keys, then its own. It now lists, revokes and reads the audit log of the tenant
    it names (header, else the default) unless it asks for every tenant (all_tenants)."""
    operator = key_for(db, None, "read", "write", "admin", name="fuzzer")
    other_operator = key_for(db, None, "read", "admin", name="spare operator")
    acme_victim = key_for(db, "acme", "read", name="victim")
    fuzz_own = key_for(db, "fuzz", "read", name="fuzz's own")
    as_fuzz = {**bearer(operator), "X-Elephant-Tenant": "fuzz"}

    def prefix(key: str) -> str:
        return key.split("_")[1]

    listed = client.get("/keys", headers=as_fuzz)
    assert listed.status_code == 200, listed.text
    assert listed.json()["tenant"] == "fuzz"
    assert {entry["prefix"] for entry in listed.json()["items"]} == {prefix(fuzz_own)}
    default = client.get("/keys", headers=bearer(operator)).json()
    assert default["tenant"] == settings.tenant.default
    assert all(entry["tenant"] == settings.tenant.default for entry in default["items"])

    for victim in (acme_victim, operator, other_operator):  # another tenant's, all-tenant keys
        refused = client.post(f"/keys/{prefix(victim)}/revoke", headers=as_fuzz)
        assert refused.status_code == 404, refused.text
        message = refused.json()["message"]
        assert "'fuzz'" in message and "all_tenants=true" in message, message
        assert client.get("/stats", headers=bearer(victim)).status_code == 200
    still = {info.prefix: info for info in list_keys(db, tenant="acme")}
    assert still[prefix(acme_victim)].revoked_at is None

    own = client.post(f"/keys/{prefix(fuzz_own)}/revoke", headers=as_fuzz)
    assert own.status_code == 200 and own.json()["tenant"] == "fuzz", own.text
    asked = client.post(
        f"/keys/{prefix(acme_victim)}/revoke", params={"all_tenants": "true"}, headers=as_fuzz
    )
    assert asked.status_code == 200 and asked.json()["tenant"] == "acme", asked.text
    spare = client.post(
        f"/keys/{prefix(other_operator)}/revoke", params={"all_tenants": "true"}, headers=as_fuzz
    )
    assert spare.status_code == 200 and spare.json()["all_tenants"] is True, spare.text
    assert client.get("/stats", headers=bearer(acme_victim)).status_code == 401

    acme_admin = bearer(keys["acme_admin"])
    beyond = client.post(
        f"/keys/{prefix(fuzz_own)}/revoke", params={"all_tenants": "true"}, headers=acme_admin
    )
    assert beyond.status_code == 403 and "all-tenant admin key" in beyond.json()["message"]

    audited = client.get("/audit", headers=as_fuzz).json()
    assert audited["tenant"] == "fuzz" and audited["items"]
    assert {entry["tenant"] for entry in audited["items"]} == {"fuzz"}
    everyone = client.get("/audit", params={"all_tenants": "true"}, headers=as_fuzz).json()
    assert everyone["tenant"] is None


def test_cli_key_commands(settings: Settings, db: Database) -> None:
    env = {
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
    }
    runner = CliRunner()
    made = runner.invoke(
        main, ["keys", "create", "--tenant", "cli-t", "--scopes", "read", "--name", "cli"], env=env
    )
    assert made.exit_code == 0, made.output
    created = json.loads(made.output)
    assert created["key"].startswith("ek_") and created["scopes"] == ["read"]
    listed = runner.invoke(main, ["keys", "list", "--tenant", "cli-t"], env=env)
    assert created["prefix"] in listed.output and created["key"] not in listed.output
    revoked = runner.invoke(main, ["keys", "revoke", created["prefix"]], env=env)
    assert revoked.exit_code == 0 and json.loads(revoked.output)["revoked_at"]
    bad = runner.invoke(main, ["keys", "create", "--tenant", "cli-t", "--scopes", "root"], env=env)
    assert bad.exit_code == 1 and "unknown scope" in bad.output and "Traceback" not in bad.output
    audited = runner.invoke(main, ["audit", "--tenant", "cli-t"], env=env)
    actions = [entry["action"] for entry in json.loads(audited.output)]
    assert actions[:2] == ["key.revoke", "key.create"]


# ------------------------------------------------------------------ browsers and hosts


def test_a_cross_site_form_cannot_delete_or_store(
    client: Client, keys: dict[str, str], elephant: Elephant
) -> None:
    acme = bearer(keys["acme_admin"])
    recorded = client.post("/graph/record", json={"entities": [{"name": "Rocket"}]}, headers=acme)
    assert recorded.status_code == 201, recorded.text
    evil = {"Origin": "http://evil.example", "content-type": "text/plain"}
    attempt = client.post(
        "/graph/entities/delete",
        content=json.dumps({"names": ["Rocket"]}),
        headers={**acme, **evil},
    )
    assert attempt.status_code == 403
    plain = client.post(
        "/graph/entities/delete",
        content=json.dumps({"names": ["Rocket"]}),
        headers={**acme, "content-type": "text/plain"},
    )
    assert plain.status_code == 415 and "application/json" in plain.json()["message"]
    opened = client.post("/graph/open", json={"names": ["Rocket"]}, headers=acme)
    assert opened.json()["entities"], "the entity survived"
    before = count_rows(elephant.db, "acme", "memories")
    stored = client.post(
        "/commit",
        content=json.dumps({"text": "Injected by a cross-site form post"}),
        headers={**acme, "content-type": "text/plain"},
    )
    assert stored.status_code == 415 and count_rows(elephant.db, "acme", "memories") == before
    fetch = client.post(
        "/commit", json={"text": "x y z"}, headers={**acme, "Sec-Fetch-Site": "cross-site"}
    )
    assert fetch.status_code == 403
    same_origin = client.post(
        "/graph/open",
        json={"names": ["Rocket"]},
        headers={**acme, "Origin": "http://127.0.0.1:7777", "Sec-Fetch-Site": "same-origin"},
    )
    assert same_origin.status_code == 200


def test_local_mode_still_refuses_cross_site_requests(
    settings: Settings, elephant: Elephant
) -> None:
    local = make_settings(
        settings.data_dir, embedded={"database": settings.embedded.database}, auth={"mode": "local"}
    )
    with TestClient(app=create_app(local, elephant), base_url="http://127.0.0.1:7777") as c:
        assert c.get("/stats", headers={"X-Elephant-Tenant": "local-t"}).status_code == 200
        form = c.post(
            "/commit",
            content="text=pwned",
            headers={
                "content-type": "application/x-www-form-urlencoded",
                "Origin": "http://evil.example",
            },
        )
        assert form.status_code == 403
        assert count_rows(elephant.db, "default", "memories") == 0


def test_a_foreign_host_header_is_refused_on_rest_and_mcp(
    settings: Settings, elephant: Elephant, keys: dict[str, str]
) -> None:
    with TestClient(app=create_app(settings, elephant), base_url="http://evil.example") as c:
        for path in ("/health", "/stats"):
            response = c.get(path, headers=bearer(keys["acme_rw"]))
            assert response.status_code == 421, (path, response.text)
            assert "server.allowed_hosts" in response.json()["message"]
        mcp = c.post("/mcp", json={}, headers=bearer(keys["acme_rw"]))
        assert mcp.status_code == 421
    configured = make_settings(
        settings.data_dir,
        embedded={"database": settings.embedded.database},
        server={"allowed_hosts": ["*.example.com"]},
    )
    with TestClient(app=create_app(configured, elephant), base_url="http://api.example.com") as c:
        assert c.get("/health").status_code == 200


def test_cors_only_for_configured_origins(
    settings: Settings, elephant: Elephant, keys: dict[str, str]
) -> None:
    allowed = make_settings(
        settings.data_dir,
        embedded={"database": settings.embedded.database},
        server={"cors_origins": ["https://console.example.com"]},
    )
    origin = {"Origin": "https://console.example.com"}
    with TestClient(app=create_app(allowed, elephant), base_url="http://127.0.0.1:7777") as c:
        preflight = c.options(
            "/search", headers={**origin, "Access-Control-Request-Method": "POST"}
        )
        assert preflight.headers.get("access-control-allow-origin") == origin["Origin"]
        posted = c.post(
            "/search", json={"query": "rocket"}, headers={**origin, **bearer(keys["acme_rw"])}
        )
        assert posted.status_code == 200
        other = c.post(
            "/search",
            json={"query": "rocket"},
            headers={"Origin": "https://evil.example", **bearer(keys["acme_rw"])},
        )
        assert other.status_code == 403
    with TestClient(app=create_app(settings, elephant), base_url="http://127.0.0.1:7777") as c:
        preflight = c.options(
            "/search", headers={**origin, "Access-Control-Request-Method": "POST"}
        )
        assert "access-control-allow-origin" not in preflight.headers


# ------------------------------------------------------------------ limits


def test_rate_limits_per_key_and_scope(
    settings: Settings, elephant: Elephant, db: Database
) -> None:
    limited = make_settings(
        settings.data_dir,
        embedded={"database": settings.embedded.database},
        auth={"rate_read_per_minute": 3, "rate_denied_per_minute": 2},
    )
    first, second = key_for(db, "rl", "read"), key_for(db, "rl", "read")
    with TestClient(app=create_app(limited, elephant), base_url="http://127.0.0.1:7777") as c:
        statuses = [c.get("/stats", headers=bearer(first)).status_code for _ in range(4)]
        assert statuses == [200, 200, 200, 429]
        refused = c.get("/stats", headers=bearer(first))
        assert (
            int(refused.headers["retry-after"]) >= 1 and "3 a minute" in refused.json()["message"]
        )
        assert c.get("/stats", headers=bearer(second)).status_code == 200
        # wrong secrets of a verified key's prefix (app/web/failed_auth.py): refused
        # without a lookup, 429 past the budget, the right secret never refused
        wrong = "ek_" + second.split("_")[1] + "_" + "x" * 43
        denied = [c.get("/stats", headers=bearer(wrong)).status_code for _ in range(3)]
        assert denied == [401, 401, 429]
        assert c.get("/stats", headers=bearer(second)).status_code == 200


def test_request_bodies_are_bounded(
    settings: Settings, elephant: Elephant, keys: dict[str, str]
) -> None:
    small = make_settings(
        settings.data_dir,
        embedded={"database": settings.embedded.database},
        server={"max_body_bytes": 2048},
    )
    before = count_rows(elephant.db, "acme", "memories")
    with TestClient(app=create_app(small, elephant), base_url="http://127.0.0.1:7777") as c:
        big = c.post("/commit", json={"text": "word " * 1000}, headers=bearer(keys["acme_rw"]))
        assert big.status_code == 413, big.text

        def chunks() -> Iterator[bytes]:
            yield b'{"text": "'
            for _ in range(10):
                yield b"word " * 100
            yield b'"}'

        streamed = c.post(
            "/commit",
            content=chunks(),
            headers={**bearer(keys["acme_rw"]), "content-type": "application/json"},
        )
        assert streamed.status_code == 413, streamed.text
    assert count_rows(elephant.db, "acme", "memories") == before


# ------------------------------------------------------------------ audit


def test_admin_actions_and_denials_are_audited(
    client: Client, keys: dict[str, str], db: Database
) -> None:
    admin = keys["acme_admin"]
    assert (
        client.put("/amac/threshold", json={"threshold": 5.0}, headers=bearer(admin)).status_code
        == 200
    )
    client.put("/amac/threshold", json={"threshold": 5.0}, headers=bearer(keys["acme_rw"]))
    entries = client.get("/audit", headers=bearer(admin)).json()["entries"]
    threshold = [entry for entry in entries if entry["action"] == "PUT /amac/threshold"]
    outcomes = {(entry["outcome"], entry["key_prefix"]) for entry in threshold}
    assert ("ok", admin.split("_")[1]) in outcomes
    assert ("denied", keys["acme_rw"].split("_")[1]) in outcomes
    assert all(entry["tenant"] == "acme" for entry in threshold)


def test_the_app_role_cannot_read_keys_or_the_audit_log(db: Database) -> None:
    for table in ("api_keys", "audit_log"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege), db.tenant("acme") as conn:
            conn.execute(f"SELECT * FROM {table}")
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.tenant("acme") as conn:
        conn.execute("UPDATE api_keys SET revoked_at = NULL")


def test_routes_without_a_scope_are_refused_at_start(
    settings: Settings, elephant: Elephant
) -> None:
    from app.web.route_access import READ, check_route_access

    with pytest.raises(RuntimeError, match="/forgotten"):
        check_route_access([("/ok", READ.opt), ("/forgotten", {"scope": "read"})])


def test_the_default_is_keys_and_make_serve_is_local() -> None:
    assert Settings().auth.mode == "keys"
    makefile = (Path(__file__).parents[2] / "Makefile").read_text()
    assert "elephant serve --auth local" in makefile


def test_every_response_carries_a_request_id(client: Client, keys: dict[str, str]) -> None:
    ok = client.get("/stats", headers=bearer(keys["acme_read"]))
    denied = client.get("/stats")
    assert ok.headers["x-request-id"] != denied.headers["x-request-id"]
    assert len(denied.headers["x-request-id"]) == 16
    kept = client.get("/stats", headers={**bearer(keys["acme_read"]), "X-Request-Id": "proxy-42"})
    assert kept.headers["x-request-id"] == "proxy-42"
    odd = client.get("/stats", headers={**bearer(keys["acme_read"]), "X-Request-Id": "a b\\c"})
    assert odd.headers["x-request-id"] != "a b\\c"


def test_key_audit_and_record_responses_are_named_schemas(
    client: Client, keys: dict[str, str]
) -> None:
    spec = client.get("/schema/openapi.json", headers=bearer(keys["operator"])).json()
    expected = {
        ("post", "/keys"): "CreatedKey",
        ("get", "/keys"): "KeyList",
        ("post", "/keys/{prefix}/revoke"): "KeyInfo",
        ("get", "/audit"): "AuditLog",
        ("get", "/tenant/owner"): "Owner",
        ("put", "/tenant/owner"): "Owner",
        ("post", "/erase"): "ErasureReport",
        ("get", "/memories"): "MemoryPage",
        ("get", "/memories/{memory_id}"): "MemoryRecord",
        ("patch", "/memories/{memory_id}"): "MemoryRecord",
        ("delete", "/memories/{memory_id}"): "ErasureReport",
        ("get", "/facts"): "FactPage",
        ("get", "/facts/{fact_id}"): "FactRecord",
        ("delete", "/facts/{fact_id}"): "ErasureReport",
    }
    for (method, path), name in expected.items():
        responses = spec["paths"][path][method]["responses"]
        [ok] = [body for status, body in responses.items() if status.startswith("2")]
        assert ok["content"]["application/json"]["schema"] == {
            "$ref": f"#/components/schemas/{name}"
        }, (method, path)
    schemas = spec["components"]["schemas"]
    assert "key" in schemas["CreatedKey"]["properties"]
    assert "key" not in schemas["KeyInfo"]["properties"]  # the secret only when created
