"""DATABASE_URL mode: any Postgres; the app pool switches to the app role with SET ROLE."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from app.db import Database
from app.db.embedded import EmbeddedPostgres
from app.errors import DatabaseUnavailable
from app.providers.embedder import Embedder
from app.services.runtime import Elephant
from tests.conftest import MANAGED, make_settings


def test_external_url_migrates_and_runs_as_the_app_role(
    pg_server: EmbeddedPostgres, tmp_path: Path, new_database: Callable[..., str]
) -> None:
    name = new_database("external", empty=True)
    url = f"postgresql://postgres@/{name}?host={pg_server.socket_dir}&port={pg_server.port}"
    db = Database(make_settings(tmp_path, database={"url": url}))
    db.open()
    try:
        assert db.embedded is None and db.mode == "external"
        assert not (tmp_path / "embedded").exists(), "no embedded server in external mode"
        with db.tenant("ext") as conn:
            row = conn.execute("SELECT current_user, session_user").fetchone()
            conn.execute(
                "INSERT INTO memories (tenant_id, kind, text, content_hash) VALUES ('ext','note','n','h')"
            )
        assert row == ("elephant_app", "postgres")
        with db.tenant("other") as conn:
            assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)
    finally:
        db.close()


def test_unreachable_external_database_is_a_clear_error(tmp_path: Path) -> None:
    url = "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"
    db = Database(make_settings(tmp_path, database={"url": url}))
    with pytest.raises(DatabaseUnavailable, match="cannot connect to the database"):
        db.open()


@pytest.mark.parametrize("backend", ["age", "relational"])
def test_external_mode_keeps_a_graph_as_the_app_role(
    pg_server: EmbeddedPostgres,
    tmp_path: Path,
    new_database: Callable[..., str],
    embedder: Embedder,
    backend: str,
) -> None:
    from app.services.graph import operations, reads
    from app.services.graph.models import EntityIn, RecordIn, RelationIn

    if backend == "age" and MANAGED:
        pytest.skip("ELEPHANT_TEST_MANAGED=1 builds databases without Apache AGE")
    name = new_database(f"external_graph_{backend}", empty=True)
    url = f"postgresql://postgres@/{name}?host={pg_server.socket_dir}&port={pg_server.port}"
    settings = make_settings(tmp_path, database={"url": url}, graph={"backend": backend})
    db = Database(settings)
    db.open()
    elephant = Elephant(settings=settings, db=db, embedder=embedder, llm=None)
    try:
        assert elephant.graph is not None and elephant.graph.backend == backend
        operations.record(
            elephant,
            "ext",
            RecordIn(
                entities=[
                    EntityIn(name="Ledger", observations=["Balances every night"]),
                    EntityIn(name="Clock"),
                ],
                relations=[RelationIn(source="Ledger", relation_type="uses", target="Clock")],
            ),
        )
        node = reads.open_nodes(elephant, "ext", ["ledger"]).entities[0]
        assert node.relations[0].target == "Clock"
        assert node.observations[0].content == "Balances every night"
        hood = reads.neighbourhood(elephant, "ext", "clock", hops=2)
        assert {n.name for n in hood.nodes} == {"Clock", "Ledger"}
        with db.tenant("ext") as conn:
            assert conn.execute("SELECT current_user").fetchone() == ("elephant_app",)
        assert reads.open_nodes(elephant, "other", ["ledger"]).entities == []
    finally:
        db.close()
