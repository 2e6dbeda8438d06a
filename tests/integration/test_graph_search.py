"""Entities from ingest and the graph lane of hybrid search, on the real stack and on both
graph backends (tests/graph_backends.py)."""

from __future__ import annotations

from dataclasses import replace

import psycopg
import pytest
from psycopg import sql

from app.errors import CapabilityMissing
from app.services.graph import operations as ops
from app.services.graph import reads
from app.services.graph.age import graph_name
from app.services.graph.backend import Backend
from app.services.graph.linking import query_candidates
from app.services.graph.models import EntityIn, RecordIn, RelationIn, ReviseIn
from app.services.memory.commit import commit_conversation, commit_note
from app.services.memory.schemas import ConversationIn, NoteIn
from app.services.ops.health import health
from app.services.retrieval.schemas import SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant
from tests.graph_backends import (
    graph_backend_fixture,  # noqa: F401 (the module runs on both graph backends)
    settings_fixture,  # noqa: F401
    with_backend,
)

CONVERSATION = {
    "session_date": "1:56 pm on 8 May, 2023",
    "conversation_id": "c1",
    "source": "chat",
    "turns": [
        {"speaker": "Caroline", "text": "I went to the Pride parade in Boston yesterday.", "id": "D1:1"},
        {"speaker": "Melanie", "text": "I painted a sunrise over Lake Tahoe last week.", "id": "D1:2"},
    ],
}  # fmt: skip


def test_query_candidates_are_spans_without_stopwords() -> None:
    spans = query_candidates("What did Caroline's friend say about Project Atlas?")
    assert "caroline" in spans and "project atlas" in spans and "project" in spans
    assert "what" not in spans and "about" not in spans


def test_ingest_upserts_speakers_and_names_and_links_facts(elephant: Elephant) -> None:
    tenant = "ingest-link"
    result = commit_conversation(
        elephant, tenant, ConversationIn.model_validate(CONVERSATION), wait=True
    )
    assert result.facts is not None and result.facts > 0
    opened = reads.open_nodes(elephant, tenant, ["Caroline", "Melanie"])
    assert opened.missing == []
    caroline, melanie = opened.entities
    assert caroline.entity_type == "person" and melanie.entity_type == "person"
    assert caroline.source == "ingest"
    assert any("Pride parade" in o.content for o in caroline.observations)
    assert any("sunrise" in o.content for o in melanie.observations)
    mentioned = {r.target for r in caroline.relations if r.relation_type == "mentions"}
    assert mentioned & {"Pride", "Boston", "Pride parade"}, caroline.relations
    # A later explicit record keeps the entity and upgrades what it knows.
    ops.record(elephant, tenant, RecordIn(entities=[EntityIn(name="caroline", domain="personal")]))
    again = reads.open_nodes(elephant, tenant, ["Caroline"]).entities[0]
    assert again.source == "record" and again.entity_type == "person"


def test_a_graph_failure_never_loses_the_facts(elephant: Elephant, graph_backend: Backend) -> None:
    tenant = "graph-fault"
    assert elephant.graph is not None
    elephant.graph.ensure(tenant)
    role = sql.Identifier(elephant.settings.database.app_role)
    tables: sql.Composable
    if graph_backend == "age":
        tables = sql.SQL("ALL TABLES IN SCHEMA {}").format(sql.Identifier(graph_name(tenant)))
    else:
        tables = sql.SQL("TABLE kg_entities, kg_relations")
    with elephant.db.admin_connection() as admin:
        admin.execute(sql.SQL("REVOKE INSERT ON {} FROM {}").format(tables, role))
    try:
        result = commit_note(
            elephant,
            tenant,
            NoteIn(text="Dana adopted a greyhound named Comet in Denver"),
            wait=True,
        )
        assert result.job_status == "done" and result.facts is not None and result.facts > 0
        with elephant.db.tenant(tenant) as conn:
            stored = conn.execute("SELECT count(*) FROM facts").fetchone()
            links = conn.execute("SELECT count(*) FROM fact_entities").fetchone()
        assert stored is not None and stored[0] == result.facts
        assert links is not None and links[0] == 0  # the linking savepoint rolled back alone
    finally:
        with elephant.db.admin_connection() as admin:
            admin.execute(sql.SQL("GRANT INSERT ON {} TO {}").format(tables, role))


def _position(elephant: Elephant, tenant: str, query: str, needle: str, graph: int) -> int:
    result = search(
        elephant, tenant, SearchRequest(query=query, limit=10, lanes={"graph": graph}, explain=True)
    )
    for position, hit in enumerate(result.hits):
        if needle in hit.text:
            return position
    return 99


def test_graph_lane_reaches_a_neighbours_facts(elephant: Elephant) -> None:
    tenant = "lane"
    ops.record(
        elephant,
        tenant,
        RecordIn(
            entities=[
                EntityIn(name="Project Atlas", entity_type="artifact", domain="software"),
                EntityIn(
                    name="Valkey",
                    entity_type="artifact",
                    domain="software",
                    observations=["Evicts idle sessions after ten minutes"],
                ),
            ],
            relations=[RelationIn(source="Project Atlas", relation_type="uses", target="Valkey")],
        ),
    )
    for text in (
        "Project Atlas kickoff happened on a rainy Monday in March",
        "Project Atlas has a blue elephant as its logo",
        "The Project Atlas team sits on the third floor",
        "Eviction notices were sent to the tenants of the old building",
        "Sessions at the conference lasted ten minutes each",
    ):
        commit_note(elephant, tenant, NoteIn(text=text, force=True), wait=True)
    question = "What does Project Atlas depend on?"
    result = search(elephant, tenant, SearchRequest(query=question, limit=10, explain=True))
    assert result.explain is not None
    assert (
        result.explain.graph.named == ["project atlas"]
        or "project atlas" in result.explain.graph.named
    )
    assert "valkey" in result.explain.graph.neighbours
    lane_hit = [h for h in result.hits if "Evicts idle sessions" in h.text]
    assert lane_hit and lane_hit[0].ranks.graph is not None
    with_lane = _position(elephant, tenant, question, "Evicts idle sessions", 15)
    without = _position(elephant, tenant, question, "Evicts idle sessions", 0)
    assert with_lane < without


def test_graph_lane_is_absent_without_named_entities(elephant: Elephant) -> None:
    result = search(elephant, "lane", SearchRequest(query="rainy weather", explain=True))
    assert result.explain is not None
    assert result.explain.lanes["graph"] == 0
    assert all(hit.ranks.graph is None for hit in result.hits)


def test_fact_entities_follow_row_level_security(elephant: Elephant) -> None:
    with elephant.db.tenant("someone-else") as conn:
        row = conn.execute("SELECT count(*) FROM fact_entities").fetchone()
    assert row is not None and row[0] == 0
    assert isinstance(psycopg.__version__, str)


def test_on_a_server_without_age(elephant: Elephant, graph_backend: Backend) -> None:
    """graph.backend age answers 503 and search has no graph lane; auto and relational
    keep the graph in tables; health says which."""
    detected = elephant.db.capabilities
    assert detected is not None
    installed = {k: v for k, v in detected.installed.items() if k != "age"}
    elephant.db.capabilities = replace(detected, installed=installed)  # as detected on a plain PG
    try:
        age = with_backend(elephant, "age")
        with pytest.raises(CapabilityMissing, match="Apache AGE") as caught:
            reads.search_nodes(age, "lane", "Project Atlas")
        assert caught.value.status_code == 503
        assert "graph.backend" in caught.value.message
        with pytest.raises(CapabilityMissing):
            ops.record(age, "lane", RecordIn(entities=[EntityIn(name="X")]))
        result = search(age, "lane", SearchRequest(query="Project Atlas", explain=True))
        assert result.explain is not None and result.explain.lanes["graph"] == 0
        assert result.hits  # the other lanes still answer
        auto = with_backend(elephant, "auto")
        assert auto.graph is not None and auto.graph.backend == "relational"
        expected = "relational" if graph_backend == "relational" else "unavailable"
        assert health(elephant.db).database.graph == expected
    finally:
        elephant.db.capabilities = detected


def test_empty_batches_are_a_clear_invalid_input(elephant: Elephant) -> None:
    import pytest

    from app.errors import InvalidInput

    for call in (ops.create_entities, ops.create_relations, ops.add_observations):
        with pytest.raises(InvalidInput, match="give at least one"):
            call(elephant, "lane", [])
    with pytest.raises(InvalidInput, match="give at least one"):
        ops.invalidate_observations(elephant, "lane", [])


def test_stats_count_the_graph(elephant: Elephant, graph_backend: Backend) -> None:
    from app.services.ops.stats import RelationCounts, StatsGraph, stats

    tenant = "graph-stats"
    ops.record(
        elephant,
        tenant,
        RecordIn(
            entities=[
                EntityIn(name="Old API", observations=["Serves JSON over HTTP/1.1"]),
                EntityIn(name="New API"),
            ],
            relations=[RelationIn(source="New API", relation_type="replaces", target="Old API")],
        ),
    )
    ops.revise(
        elephant,
        tenant,
        ReviseIn(entity="Old API", superseded_by="New API", observations=[]),
    )
    graph = stats(elephant, tenant).graph
    assert graph.available is True and graph.entities == 2
    assert graph.backend == graph_backend
    assert graph.relations == {"supersedes": RelationCounts(current=1, closed=0)}
    assert graph.observations == 0  # the old API's observation was superseded
    assert stats(elephant, "no-graph-here").graph == StatsGraph(
        available=True, backend=graph_backend, entities=0, relations={}, observations=0
    )


def test_open_nodes_as_of_shows_the_graph_as_it_was(elephant: Elephant) -> None:
    from datetime import UTC, datetime

    import pytest

    from app.errors import InvalidInput
    from app.services.graph.models import RelationRef

    tenant = "as-of"
    ops.record(
        elephant,
        tenant,
        RecordIn(
            entities=[
                EntityIn(name="Billing", observations=["Runs nightly at 02:00"]),
                EntityIn(name="Cron"),
                EntityIn(name="Stripe"),
            ],
            relations=[
                RelationIn(source="Billing", relation_type="uses", target="Cron"),
                RelationIn(source="Billing", relation_type="depends_on", target="Stripe"),
            ],
        ),
    )
    before = datetime.now(UTC)
    ops.invalidate_relations(
        elephant,
        tenant,
        [RelationRef(source="billing", relation_type="depends on", target="stripe")],
    )
    with pytest.raises(InvalidInput, match="no current relation billing -depends_on-> stripe"):
        ops.invalidate_relations(
            elephant,
            tenant,
            [RelationRef(source="billing", relation_type="depends_on", target="stripe")],
        )
    revised = ops.revise(
        elephant,
        tenant,
        ReviseIn(
            entity="Billing",
            superseded_by="Billing v2",
            superseding_entity=EntityIn(name="Billing v2", observations=["Runs on events"]),
        ),
    )
    assert revised.relations_closed == 1  # uses -> Cron; the supersedes edge stays

    now = reads.open_nodes(elephant, tenant, ["Billing", "Billing v2"]).entities
    assert now[0].observations == [] and now[0].valid_to is not None
    assert [(r.source, r.relation_type) for r in now[0].relations] == [("Billing v2", "supersedes")]
    then = reads.open_nodes(elephant, tenant, ["Billing", "Billing v2"], as_of=before)
    assert then.missing == ["Billing v2"]  # did not exist yet
    billing = then.entities[0]
    assert [o.content for o in billing.observations] == ["Runs nightly at 02:00"]
    assert billing.observations[0].status_now == "superseded"
    assert sorted(r.relation_type for r in billing.relations) == ["depends_on", "uses"]
    assert all(r.valid_to is not None for r in billing.relations)
