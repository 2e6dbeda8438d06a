"""A refused request body is the caller's 422 naming the field, on every route.

Found by an outside attack: ``POST /erase {"tenant": "maybe"}`` and ``POST /keys
{"tenant": "ACME", ...}`` answered 500. Litestar sorted pydantic's errors by the field's
name alone and took a body field named like an injected dependency (``tenant``) for a
dependency that failed; beside another error the field went unnamed. The request models
are now decoded by app/api/requests.py (RequestModels). The sweep sends every JSON route
a wrong-typed value for each field of its body.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from uuid import uuid4

import pydantic
import pytest
from litestar import Litestar
from litestar.enums import RequestEncodingType
from litestar.routes import HTTPRoute
from litestar.testing import TestClient

from app.api import create_app
from app.config import Settings
from app.db import Database
from app.providers.embedder import Embedder
from app.services.runtime import Elephant
from tests.conftest import make_settings, operator_key

Client = TestClient  # type: ignore[type-arg]
TENANT = "bodies"
WRONG_VALUES: tuple[Any, ...] = (2.5, "maybe", [1], {"nested": 1}, True, -1)
PATH_PARAM = re.compile(r"\{(\w+):(\w+)\}")


@pytest.fixture(scope="module")
def app(settings: Settings, db: Database, embedder: Embedder) -> Litestar:
    """The API without rate limits (the sweep sends hundreds of admin requests)."""
    served = make_settings(
        settings.data_dir,
        embedded={"database": settings.embedded.database},
        auth={"rate_read_per_minute": 0, "rate_write_per_minute": 0, "rate_admin_per_minute": 0},
    )
    return create_app(served, Elephant(settings=served, db=db, embedder=embedder, llm=None))


@pytest.fixture(scope="module")
def client(app: Litestar, db: Database) -> Iterator[Client]:
    with TestClient(app=app, base_url="http://127.0.0.1:7777") as test_client:
        test_client.headers["Authorization"] = f"Bearer {operator_key(db, 'bodies')}"
        test_client.headers["X-Elephant-Tenant"] = TENANT
        yield test_client


def json_routes(app: Litestar) -> list[tuple[str, str, type[pydantic.BaseModel]]]:
    """(method, path with its parameters filled, body model) of every JSON-body route."""
    found = []
    for route in app.routes:
        if not isinstance(route, HTTPRoute):
            continue
        for handler in route.route_handlers:
            data = handler.parsed_fn_signature.parameters.get("data")
            if data is None or data.kwarg_definition is None:
                continue
            if getattr(data.kwarg_definition, "media_type", None) != RequestEncodingType.JSON:
                continue
            assert isinstance(data.annotation, type), data.annotation
            assert issubclass(data.annotation, pydantic.BaseModel), (route.path, data.annotation)
            path = PATH_PARAM.sub(
                lambda m: str(uuid4()) if m.group(2) == "uuid" else "abc", route.path
            )
            for method in sorted(handler.http_methods):
                found.append((method, path, data.annotation))
    return found


def refuses_field(model: type[pydantic.BaseModel], field: str, value: Any) -> bool:
    """Whether ``model`` refuses ``value`` in ``field`` (then the API must say so)."""
    try:
        model.model_validate({field: value})
    except pydantic.ValidationError as exc:
        return any(error["loc"][:1] == (field,) for error in exc.errors())
    return False


def names_field(response: Any, field: str) -> str | None:
    """None when ``response`` is a 422 in the error shape naming ``field``, else what is
    wrong with it."""
    if response.status_code != 422:
        return f"status {response.status_code}: {response.text[:300]}"
    body = response.json()
    keys = [str(item.get("key", "")) for item in body.get("details", {}).get("fields", [])]
    if body.get("error") != "invalid_input" or field not in body.get("message", ""):
        return f"message does not name {field!r}: {body}"
    if not any(key == field or key.startswith(f"{field}.") for key in keys):
        return f"details.fields do not name {field!r}: {body}"
    return None


def test_every_json_route_names_a_wrong_typed_body_field(app: Litestar, client: Client) -> None:
    routes = json_routes(app)
    paths = {path for _, path, _ in routes}
    assert {"/erase", "/keys", "/commit", "/search"} <= paths, paths  # the sweep sees them
    failures = []
    sent = 0
    for method, path, model in routes:
        for field in model.model_fields:
            for value in WRONG_VALUES:
                if not refuses_field(model, field, value):
                    continue
                response = client.request(method, path, json={field: value})
                sent += 1
                problem = names_field(response, field)
                if problem is not None:
                    failures.append(f"{method} {path} {{{field!r}: {value!r}}}: {problem}")
    assert sent > 100
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(
    ("path", "body", "fields"),
    [
        ("/erase", {"tenant": 2.5}, ["tenant"]),
        ("/erase", {"tenant": "maybe"}, ["tenant"]),
        ("/erase", {"tenant": [1]}, ["tenant"]),
        ("/keys", {"tenant": "ACME", "scopes": ["admin"]}, ["tenant"]),
        ("/keys", {"tenant": 2.5, "scopes": ["x"]}, ["tenant", "scopes"]),
        ("/tenant/owner", {"owner": 5, "tenant": "acme"}, ["owner", "tenant"]),
    ],
)
def test_a_body_field_named_like_a_dependency_is_a_422(
    client: Client, path: str, body: dict[str, Any], fields: list[str]
) -> None:
    method = "PUT" if path == "/tenant/owner" else "POST"
    response = client.request(method, path, json=body)
    for field in fields:
        assert names_field(response, field) is None, response.text


def test_a_valid_body_still_works(client: Client) -> None:
    response = client.post("/erase", json={"tenant": True, "dry_run": True})
    assert response.status_code == 200, response.text
