"""Graph tests on both backends: Apache AGE and the relational tables (migration 0008).

A test module that imports ``graph_backend_fixture`` and ``settings_fixture`` from here
(fixtures named ``graph_backend`` and ``settings``) runs every
test once per backend, each on a fresh database of its own: the module's ``settings``
(which conftest's ``db``, ``elephant`` and ``api_client`` build on) set
``graph.backend``. AGE runs are skipped when the databases are built without AGE
(ELEPHANT_TEST_MANAGED=1). Also here: SQL that reads a tenant's graph rows on either
backend, for the tests that look below the services.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

import pytest

from app.config import Settings
from app.db.runtime import Connection
from app.services.graph.backend import Backend
from app.services.runtime import Elephant
from tests.conftest import MANAGED, make_settings

BACKENDS: tuple[Backend, ...] = ("age", "relational")

# (tenant_id, key, name, role, domain, epistemic, source, valid_from, valid_to, ...)
ENTITY_ROWS: dict[str, str] = {"age": "graph_entities", "relational": "kg_entities"}
# (tenant_id, source, relation, target, epistemic, valid_from, valid_to, recorded_at):
# the relational form is the branch the analyst view graph_relations needs.
RELATION_ROWS: dict[str, str] = {
    "age": "graph_relations",
    "relational": (
        "(SELECT r.tenant_id, s.name AS source, r.relation_type AS relation, d.name AS target, "
        "r.epistemic, r.valid_from, r.valid_to, r.recorded_at FROM kg_relations AS r "
        "JOIN kg_entities AS s ON s.tenant_id = r.tenant_id AND s.key = r.source_key "
        "JOIN kg_entities AS d ON d.tenant_id = r.tenant_id AND d.key = r.target_key) AS rel"
    ),
}


@pytest.fixture(scope="module", params=BACKENDS, name="graph_backend")
def graph_backend_fixture(request: pytest.FixtureRequest) -> Backend:
    backend: Backend = request.param
    if backend == "age" and MANAGED:
        pytest.skip("ELEPHANT_TEST_MANAGED=1 builds databases without Apache AGE")
    return backend


@pytest.fixture(scope="module", name="settings")
def settings_fixture(
    request: pytest.FixtureRequest,
    pg_data_dir: Path,
    new_database: Callable[..., str],
    graph_backend: Backend,
) -> Settings:
    """A fresh database for this module and backend; graph.backend set to the backend."""
    name = new_database(f"{request.module.__name__.rsplit('.', 1)[-1]}_{graph_backend}")
    return make_settings(pg_data_dir, embedded={"database": name}, graph={"backend": graph_backend})


def with_backend(elephant: Elephant, backend: Literal["auto", "age", "relational"]) -> Elephant:
    """Another runtime on the same database whose graph is ``backend``."""
    graph = elephant.settings.graph.model_copy(update={"backend": backend})
    settings = elephant.settings.model_copy(update={"graph": graph})
    return Elephant(settings=settings, db=elephant.db, embedder=elephant.embedder, llm=None)


def views_read(conn: Connection, backend: Backend) -> bool:
    """Do the analyst views graph_entities / graph_relations read this backend's rows?
    (AGE always; the relational tables once sql/objects/10_graph_views.sql has them.)"""
    if backend == "age":
        return True
    row = conn.execute(
        "SELECT pg_get_viewdef('graph_entities'::regclass) || "
        "coalesce((SELECT string_agg(prosrc, ' ') FROM pg_proc "
        "          WHERE proname = 'elephant_graph_entities'), '')"
    ).fetchone()
    return row is not None and "kg_entities" in str(row[0])
