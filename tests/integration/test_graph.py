"""The knowledge graph: vocabulary, atomic record, decisions, revise, bounded reads.

Real embedded Postgres, the real embedding model; nothing mocked. Every test runs
on both backends (Apache AGE and the relational tables: tests/graph_backends.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from app.errors import InvalidInput
from app.services.graph import operations as ops
from app.services.graph import reads
from app.services.graph import vocabulary as vocab
from app.services.graph.backend import Backend
from app.services.graph.models import (
    DecisionIn,
    EntitiesDeleted,
    EntityIn,
    EntitySummary,
    GraphNode,
    ObservationRefs,
    ObservationsDeleted,
    ObservationsIn,
    ObservationsInvalidated,
    RecordIn,
    RelationIn,
    RelationRef,
    RelationsDeleted,
    ReviseIn,
)
from app.services.ops.health import health
from app.services.runtime import Elephant
from tests.graph_backends import (
    ENTITY_ROWS,
    RELATION_ROWS,
    graph_backend_fixture,  # noqa: F401 (the module runs on both graph backends)
    settings_fixture,  # noqa: F401
    views_read,
)


def _entities(elephant: Elephant, tenant: str) -> dict[str, EntitySummary | GraphNode]:
    page = reads.read_graph(elephant, tenant, offset=0, limit=200, summary=False)
    return {entity.name: entity for entity in page.entities}


# ------------------------------------------------------------------ vocabulary


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("connected_to", "related_to"),
        ("Connected To", "related_to"),
        ("connected-to", "related_to"),
        ("aspect_of", "part_of"),
        ("REQUIRES", "depends_on"),
        ("depends on", "depends_on"),
        ("evolved-into", "evolved_into"),
        ("Works At", "works_at"),
    ],
)
def test_relation_aliases_fold(given: str, canonical: str) -> None:
    assert vocab.relation_type(given) == canonical


def test_unknown_relation_rejected_with_the_list() -> None:
    with pytest.raises(InvalidInput) as caught:
        vocab.relation_type("loves_deeply")
    message = caught.value.message
    assert "loves_deeply" in message
    for name in vocab.RELATIONS:
        assert name in message


def test_roles_domains_epistemic() -> None:
    assert vocab.role("Open Question") == "open-question"
    assert vocab.role("organisation") == "organization"
    assert vocab.epistemic(None) == "unknown"
    assert vocab.epistemic("Hypothesis") == "hypothesis"
    with pytest.raises(InvalidInput, match="decision, concept"):
        vocab.role("wizard")
    with pytest.raises(InvalidInput, match="software"):
        vocab.domain("astrology", vocab.DEFAULT_DOMAINS)
    with pytest.raises(InvalidInput, match="assertion, hypothesis"):
        vocab.epistemic("certain")


# ------------------------------------------------------------------ record


def test_record_creates_entities_relations_observations(elephant: Elephant) -> None:
    result = ops.record(
        elephant,
        "rec",
        RecordIn(
            entities=[
                EntityIn(
                    name="Elephant",
                    entity_type="artifact",
                    domain="software",
                    observations=["Stores memories in Postgres"],
                ),
                EntityIn(name="pgvector", entity_type="artifact", domain="software"),
            ],
            relations=[RelationIn(source="Elephant", relation_type="requires", target="pgvector")],
        ),
    )
    assert result.entities_created == ["Elephant", "pgvector"]
    assert result.relations_created == 1
    assert result.observations_added == 1
    opened = reads.open_nodes(elephant, "rec", ["elephant"])
    node = opened.entities[0]
    assert node.entity_type == "artifact"
    assert [o.content for o in node.observations] == ["Stores memories in Postgres"]
    assert node.relations[0].relation_type == "depends_on"
    assert node.relations[0].target == "pgvector"

    again = ops.record(
        elephant,
        "rec",
        RecordIn(
            entities=[EntityIn(name="ELEPHANT", observations=["stores memories in  postgres"])],
            relations=[
                RelationIn(source="elephant", relation_type="depends_on", target="PGVECTOR")
            ],
        ),
    )
    assert again.entities_created == []
    assert again.entities_merged == ["Elephant"]
    assert again.relations_created == 0 and again.relations_existing == 1
    assert again.observations_added == 0 and again.observations_duplicate == 1


# ------------------------------------------------------------------ helpers


def _counts(elephant: Elephant, tenant: str) -> dict[str, int]:
    """Entities, relations (by type), observation facts (by status) and their links."""
    store = elephant.graph
    assert store is not None
    with elephant.db.tenant(tenant) as conn:
        graph = store.counts(conn, tenant)
        queries = {
            "observations": "SELECT count(*) FROM facts WHERE observation_kind IS NOT NULL",
            "active": "SELECT count(*) FROM facts WHERE status = 'active'",
            "links": "SELECT count(*) FROM fact_entities",
        }
        counts = {}
        for name, query in queries.items():
            row = conn.execute(query).fetchone()
            assert row is not None
            counts[name] = int(row[0])
    per_type = {name: c.current + c.closed for name, c in graph.relations.items()}
    counts["entities"] = graph.entities
    counts["relations"] = sum(per_type.values())
    counts["supersedes"] = per_type.get("supersedes", 0)
    return counts


def test_the_backend_in_use(elephant: Elephant, graph_backend: Backend) -> None:
    assert elephant.graph is not None and elephant.graph.backend == graph_backend
    assert health(elephant.db).database.graph == graph_backend


def _seed(elephant: Elephant, tenant: str) -> None:
    ops.record(
        elephant,
        tenant,
        RecordIn(
            entities=[
                EntityIn(name="Postgres", entity_type="artifact", observations=["A database"]),
                EntityIn(name="AGE", entity_type="artifact", observations=["A graph extension"]),
            ],
            relations=[RelationIn(source="AGE", relation_type="part_of", target="Postgres")],
        ),
    )


def _kinds(node: GraphNode) -> list[tuple[str, str]]:
    return [(o.kind, o.content) for o in node.observations]


# ------------------------------------------------------------------ record is all or nothing


ATOMIC_CASES: dict[str, tuple[dict[str, Any], str]] = {
    "unknown relation type": (
        {
            "entities": [{"name": "New A", "observations": ["fresh"]}, {"name": "New B"}],
            "relations": [
                {"source": "New A", "relation_type": "uses", "target": "New B"},
                {"source": "New A", "relation_type": "loves_deeply", "target": "Postgres"},
                {"source": "New B", "relation_type": "part_of", "target": "Postgres"},
            ],
            "observations": [{"entity": "Postgres", "contents": ["new fact"]}],
        },
        "unknown relation type 'loves_deeply': use one of supports",
    ),
    "unknown entity type mid-batch": (
        {
            "entities": [
                {"name": "New A", "entity_type": "concept", "observations": ["fresh"]},
                {"name": "New B", "entity_type": "wizard"},
                {"name": "New C", "entity_type": "task"},
            ],
            "relations": [{"source": "New A", "relation_type": "uses", "target": "Postgres"}],
        },
        "unknown entity type 'wizard'",
    ),
    "bad domain mid-batch": (
        {
            "entities": [
                {"name": "New A", "domain": "software", "observations": ["fresh"]},
                {"name": "New B", "domain": "astrology"},
            ]
        },
        "unknown domain 'astrology'",
    ),
    "relation to an entity neither stored nor in the call": (
        {
            "entities": [{"name": "New A", "observations": ["fresh"]}],
            "relations": [
                {"source": "New A", "relation_type": "uses", "target": "Postgres"},
                {"source": "New A", "relation_type": "uses", "target": "Nowhere Land"},
            ],
            "observations": [{"entity": "AGE", "contents": ["new fact"]}],
        },
        "unknown entities: nowhere land",
    ),
    "observations of an unknown entity": (
        {
            "entities": [{"name": "New A"}],
            "observations": [
                {"entity": "Postgres", "contents": ["new fact"]},
                {"entity": "Ghost", "contents": ["boo"]},
            ],
        },
        "unknown entities: ghost",
    ),
    "unknown observation kind": (
        {
            "entities": [
                {"name": "New A", "observations": ["fresh", {"content": "x", "kind": "gossip"}]}
            ]
        },
        "unknown observation kind 'gossip'",
    ),
    "bad epistemic status on a relation": (
        {
            "relations": [
                {"source": "AGE", "relation_type": "uses", "target": "Postgres"},
                {
                    "source": "Postgres",
                    "relation_type": "enables",
                    "target": "AGE",
                    "epistemic": "certain",
                },
            ]
        },
        "unknown epistemic status 'certain'",
    ),
}


@pytest.mark.parametrize("case", list(ATOMIC_CASES))
def test_record_writes_nothing_when_one_item_is_invalid(elephant: Elephant, case: str) -> None:
    tenant = "atomic"  # _seed is idempotent: each case starts from the same graph
    _seed(elephant, tenant)
    before = _counts(elephant, tenant)
    assert before["entities"] == 2 and before["relations"] == 1 and before["observations"] == 2
    body, fragment = ATOMIC_CASES[case]
    with pytest.raises(InvalidInput) as caught:
        ops.record(elephant, tenant, RecordIn.model_validate(body))
    assert fragment in caught.value.message
    assert _counts(elephant, tenant) == before
    assert set(_entities(elephant, tenant)) == {"Postgres", "AGE"}
    opened = reads.open_nodes(elephant, tenant, ["Postgres"]).entities[0]
    assert [o.content for o in opened.observations] == ["A database"]


def test_record_missing_entities_are_listed(elephant: Elephant) -> None:
    _seed(elephant, "atomic-missing")
    with pytest.raises(InvalidInput) as caught:
        ops.create_relations(
            elephant,
            "atomic-missing",
            [
                RelationIn(source="Zed", relation_type="uses", target="Postgres"),
                RelationIn(source="AGE", relation_type="uses", target="Yak"),
            ],
        )
    assert caught.value.details == {"missing": ["yak", "zed"]}
    assert "nothing was written" in caught.value.message


# ------------------------------------------------------------------ revise


def _revise_fixture(elephant: Elephant, tenant: str) -> None:
    ops.record(
        elephant,
        tenant,
        RecordIn(
            entities=[
                EntityIn(
                    name="Old plan",
                    entity_type="decision",
                    observations=["Use MySQL", "Ship in May"],
                )
            ]
        ),
    )


def test_failing_revise_changes_nothing(elephant: Elephant) -> None:
    tenant = "revise-fail"
    _revise_fixture(elephant, tenant)
    before = _counts(elephant, tenant)
    attempts = [
        ReviseIn(  # names an observation the entity does not have
            entity="Old plan",
            superseded_by="New plan",
            observations=["Use MySQL", "Use Oracle"],
            superseding_entity=EntityIn(
                name="New plan", entity_type="decision", observations=["Use Postgres"]
            ),
        ),
        ReviseIn(entity="Old plan", superseded_by="Never created"),  # replacement missing
        ReviseIn(entity="No such plan", superseded_by="Old plan"),  # nothing to revise
        ReviseIn(  # bad vocabulary in the superseding entity
            entity="Old plan",
            superseded_by="New plan",
            superseding_entity=EntityIn(name="New plan", entity_type="wizard"),
        ),
        ReviseIn(entity="Old plan", superseded_by="old  PLAN"),  # itself
    ]
    messages = []
    for attempt in attempts:
        with pytest.raises(InvalidInput) as caught:
            ops.revise(elephant, tenant, attempt)
        messages.append(caught.value.message)
    assert "no active observation 'Use Oracle'" in messages[0]
    assert "Use MySQL" in messages[0] and "nothing was changed" in messages[0]
    assert "never created" in messages[1]
    assert "does not exist" in messages[2]
    assert "cannot supersede itself" in messages[4]
    assert _counts(elephant, tenant) == before
    assert before["supersedes"] == 0
    assert set(_entities(elephant, tenant)) == {"Old plan"}
    old = reads.open_nodes(elephant, tenant, ["Old plan"]).entities[0]
    assert old.valid_to is None and old.relations == []
    assert [o.content for o in old.observations] == ["Use MySQL", "Ship in May"]


def test_revise_closes_observations_and_links_the_replacement(elephant: Elephant) -> None:
    tenant = "revise-ok"
    _revise_fixture(elephant, tenant)
    result = ops.revise(
        elephant,
        tenant,
        ReviseIn(
            entity="old plan",
            superseded_by="New plan",
            observations=["use mysql"],  # by text, case and spacing ignored
            superseding_entity=EntityIn(
                name="New plan", entity_type="decision", observations=["Use Postgres"]
            ),
            reason="MySQL lacks AGE",
        ),
    )
    assert result.observations_invalidated == 1
    assert result.entities_created == ["New plan"]
    nodes = reads.open_nodes(elephant, tenant, ["Old plan", "New plan"]).entities
    old, new = nodes
    assert old.valid_to is None  # only one observation was revised
    assert [o.content for o in old.observations] == ["Ship in May"]
    assert [(r.source, r.relation_type, r.target) for r in new.relations] == [
        ("New plan", "supersedes", "Old plan")
    ]
    with elephant.db.tenant(tenant) as conn:
        row = conn.execute(
            "SELECT status, valid_to IS NOT NULL, metadata FROM facts WHERE text = 'Use MySQL'"
        ).fetchone()
    assert row == (
        "superseded",
        True,
        {"reason": "MySQL lacks AGE", "superseded_by_entity": "New plan"},
    )


# ------------------------------------------------------------------ decisions


def test_decision_keeps_rejected_alternatives_as_separate_observations(
    elephant: Elephant,
) -> None:
    tenant = "decisions"
    result = ops.record_decision(
        elephant,
        tenant,
        DecisionIn(
            name="Vector store",
            domain="software",
            decided="Use pgvector inside Postgres",
            because="One database to run and back up",
            rejected=["Pinecone: a second system", "Qdrant: another server"],
        ),
    )
    assert result.observations_added == 4
    node = reads.open_nodes(elephant, tenant, ["vector store"]).entities[0]
    assert (node.entity_type, node.domain, node.epistemic) == (
        "decision",
        "software",
        "assertion",
    )
    assert _kinds(node) == [
        ("decided", "Use pgvector inside Postgres"),
        ("because", "One database to run and back up"),
        ("rejected", "Pinecone: a second system"),
        ("rejected", "Qdrant: another server"),
    ]
    with elephant.db.tenant(tenant) as conn:
        rows = conn.execute(
            "SELECT observation_kind, text FROM facts WHERE observation_kind = 'rejected' "
            "ORDER BY text"
        ).fetchall()
        current = conn.execute(
            "SELECT observation_kind, count(*) FROM current_facts GROUP BY 1 ORDER BY 1"
        ).fetchall()
    assert rows == [
        ("rejected", "Pinecone: a second system"),
        ("rejected", "Qdrant: another server"),
    ]
    assert current == [("because", 1), ("decided", 1), ("rejected", 2)]


def test_decision_supersedes_an_earlier_one(elephant: Elephant, graph_backend: Backend) -> None:
    tenant = "decisions-next"
    first = DecisionIn(
        name="Queue v1", decided="Use Redis for jobs", because="Fast", rejected=["Kafka"]
    )
    ops.record_decision(elephant, tenant, first)
    with pytest.raises(InvalidInput, match="'Queue v0' does not exist"):
        ops.record_decision(
            elephant,
            tenant,
            DecisionIn(name="Queue v2", decided="x", because="y", supersedes="Queue v0"),
        )
    assert set(_entities(elephant, tenant)) == {"Queue v1"}
    ops.record_decision(
        elephant,
        tenant,
        DecisionIn(
            name="Queue v2",
            decided="Use Postgres SKIP LOCKED for jobs",
            because="One system fewer",
            rejected=["Redis"],
            supersedes="queue V1",
        ),
    )
    old, new = reads.open_nodes(elephant, tenant, ["Queue v1", "Queue v2"]).entities
    assert old.valid_to is not None
    assert old.observations == []  # decided, because and rejected all closed
    assert [(r.source, r.relation_type, r.target) for r in new.relations] == [
        ("Queue v2", "supersedes", "Queue v1")
    ]
    assert [k for k, _ in _kinds(new)] == ["decided", "because", "rejected"]
    with elephant.db.tenant(tenant) as conn:
        statuses = conn.execute(
            "SELECT f.observation_kind, f.status, f.valid_to IS NOT NULL FROM facts AS f "
            "JOIN fact_entities AS fe ON fe.fact_id = f.id WHERE fe.entity_key = 'queue v1' "
            "ORDER BY f.observation_kind"
        ).fetchall()
        view = conn.execute(
            f"SELECT name, valid_to IS NOT NULL FROM {ENTITY_ROWS[graph_backend]} ORDER BY name"
        ).fetchall()
    assert statuses == [
        ("because", "superseded", True),
        ("decided", "superseded", True),
        ("rejected", "superseded", True),
    ]
    assert view == [("Queue v1", True), ("Queue v2", False)]


# ------------------------------------------------------------------ invalidate and delete


def test_invalidate_keeps_the_row_and_hides_it(elephant: Elephant) -> None:
    tenant = "invalidate"
    ops.record(
        elephant,
        tenant,
        RecordIn(entities=[EntityIn(name="Dana", observations=["Lives in Lisbon", "Likes jazz"])]),
    )
    before = _counts(elephant, tenant)
    result = ops.invalidate_observations(
        elephant,
        tenant,
        [ObservationRefs(entity="dana", observations=["lives in lisbon"])],
        reason="moved to Porto",
    )
    assert result == ObservationsInvalidated(observations_invalidated=1)
    node = reads.open_nodes(elephant, tenant, ["Dana"]).entities[0]
    assert [o.content for o in node.observations] == ["Likes jazz"]
    after = _counts(elephant, tenant)
    assert after["observations"] == before["observations"] == 2
    assert after["active"] == 1
    with elephant.db.tenant(tenant) as conn:
        row = conn.execute(
            "SELECT status, valid_to IS NOT NULL, expired_at IS NOT NULL, metadata->>'reason' "
            "FROM facts WHERE text = 'Lives in Lisbon'"
        ).fetchone()
        in_view = conn.execute(
            "SELECT count(*) FROM current_facts WHERE text = 'Lives in Lisbon'"
        ).fetchone()
    assert row == ("retracted", True, True, "moved to Porto")
    assert in_view == (0,)
    # The same text can be observed again later: a new active row, the old one kept.
    again = ops.add_observations(
        elephant, tenant, [ObservationsIn(entity="Dana", contents=["Lives in Lisbon"])]
    )
    assert again.observations_added == 1
    with pytest.raises(InvalidInput, match="no active observation 'Owns a cat'"):
        ops.invalidate_observations(
            elephant,
            tenant,
            [
                ObservationRefs(entity="Dana", observations=["Likes jazz"]),
                ObservationRefs(entity="Dana", observations=["Owns a cat"]),
            ],
        )
    node = reads.open_nodes(elephant, tenant, ["Dana"]).entities[0]
    assert {o.content for o in node.observations} == {"Likes jazz", "Lives in Lisbon"}


def test_delete_operations_remove(elephant: Elephant) -> None:
    tenant = "deletes"
    ops.record(
        elephant,
        tenant,
        RecordIn(
            entities=[
                EntityIn(name="Erin", entity_type="person", observations=["Plays chess", "Cooks"]),
                EntityIn(name="Acme", entity_type="organization", observations=["Makes anvils"]),
                EntityIn(name="Paris", entity_type="place"),
            ],
            relations=[
                RelationIn(source="Erin", relation_type="works_for", target="Acme"),
                RelationIn(source="Erin", relation_type="lives_in", target="Paris"),
            ],
        ),
    )
    cooks = reads.open_nodes(elephant, tenant, ["Erin"]).entities[0].observations[1].id
    deleted = ops.delete_observations(
        elephant, tenant, [ObservationRefs(entity="Erin", observations=[cooks])]
    )
    assert deleted == ObservationsDeleted(observations_deleted=1)
    assert ops.delete_relations(
        elephant,
        tenant,
        [
            RelationRef(source="erin", relation_type="lives in", target="PARIS"),
            RelationRef(source="Erin", relation_type="knows", target="Paris"),  # not there
        ],
    ) == RelationsDeleted(relations_deleted=1)
    erin = reads.open_nodes(elephant, tenant, ["Erin"]).entities[0]
    assert [o.content for o in erin.observations] == ["Plays chess"]
    assert [r.target for r in erin.relations] == ["Acme"]
    counts = _counts(elephant, tenant)
    assert (counts["entities"], counts["relations"], counts["observations"]) == (3, 1, 2)

    result = ops.delete_entities(elephant, tenant, ["Erin", "Nobody"])
    assert result == EntitiesDeleted(entities_deleted=1, missing=["Nobody"])
    counts = _counts(elephant, tenant)
    assert (counts["entities"], counts["relations"], counts["observations"]) == (2, 0, 1)
    assert counts["links"] == 1
    opened = reads.open_nodes(elephant, tenant, ["Erin", "Acme"])
    assert opened.missing == ["Erin"]
    assert opened.entities[0].relations == []
    assert ops.delete_entities(elephant, "deletes-none", ["Erin"]) == EntitiesDeleted(
        entities_deleted=0, missing=["Erin"]
    )


def test_closed_relations_are_hidden_from_reads(elephant: Elephant) -> None:
    tenant = "closed-relations"
    _seed(elephant, tenant)
    ops.create_relations(
        elephant, tenant, [RelationIn(source="Postgres", relation_type="enables", target="AGE")]
    )
    store = elephant.graph
    assert store is not None
    with elephant.db.tenant(tenant) as conn:
        closed = store.invalidate_relations(
            conn, tenant, [("age", "part_of", "postgres")], "2030-01-01T00:00:00+00:00"
        )
        active = store.relations(conn, tenant, ["age"], active_only=True)
        every = store.relations(conn, tenant, ["age"], active_only=False)
    assert closed == 1
    assert [r.triple for r in active] == [("postgres", "enables", "age")]
    assert sorted(r.triple for r in every) == [
        ("age", "part_of", "postgres"),
        ("postgres", "enables", "age"),
    ]
    node = reads.open_nodes(elephant, tenant, ["AGE"]).entities[0]
    assert [(r.source, r.relation_type) for r in node.relations] == [("Postgres", "enables")]
    assert len(reads.neighbourhood(elephant, tenant, "age", hops=1).edges) == 1
    # A closed relation does not block recording the same relation again.
    again = ops.create_relations(
        elephant, tenant, [RelationIn(source="AGE", relation_type="part of", target="Postgres")]
    )
    assert again.relations_created == 1


# ------------------------------------------------------------------ bounded reads


def test_search_nodes_is_bounded_and_says_so(elephant: Elephant) -> None:
    tenant = "search-bounds"
    ops.create_entities(
        elephant,
        tenant,
        [
            EntityIn(name=f"Widget {n:02d}", entity_type="artifact", domain="software")
            for n in range(30)
        ]
        + [EntityIn(name="Hub node", entity_type="concept")]
        + [EntityIn(name=f"Spoke {n:02d}") for n in range(12)],
    )
    ops.create_relations(
        elephant,
        tenant,
        [
            RelationIn(source="Hub node", relation_type="uses", target=f"Spoke {n:02d}")
            for n in range(12)
        ],
    )
    page = reads.search_nodes(elephant, tenant, "widget", limit=5)
    assert len(page.entities) == 5
    assert (page.total_matched, page.truncated) == (30, True)
    assert [e.name for e in page.entities] == [f"Widget {n:02d}" for n in range(5)]
    everything = reads.search_nodes(elephant, tenant, "widget", limit=50)
    assert (len(everything.entities), everything.total_matched) == (30, 30)
    assert everything.truncated is False
    exact = reads.search_nodes(elephant, tenant, "widget 07", limit=5)
    assert exact.entities[0].name == "Widget 07"

    hub = reads.search_nodes(elephant, tenant, "hub node", max_relations=3).entities[0]
    assert hub.name == "Hub node"
    assert len(hub.relations) == 3
    assert (hub.relations_total, hub.relations_truncated) == (12, True)
    none = reads.search_nodes(elephant, tenant, "hub node", max_relations=0).entities[0]
    assert none.relations == [] and none.relations_total == 12

    assert reads.search_nodes(elephant, tenant, "widget", domain="music").total_matched == 0
    assert reads.search_nodes(elephant, tenant, "widget", entity_type="file").total_matched == 30
    assert reads.search_nodes(elephant, tenant, "widget", entity_type="task").total_matched == 0
    bad: dict[str, Any]
    for bad in ({"limit": 0}, {"limit": 201}, {"max_relations": -1}):
        with pytest.raises(InvalidInput, match=next(iter(bad))):
            reads.search_nodes(elephant, tenant, "widget", **bad)
    with pytest.raises(InvalidInput, match="unknown domain"):
        reads.search_nodes(elephant, tenant, "widget", domain="astrology")
    with pytest.raises(InvalidInput, match="query"):
        reads.search_nodes(elephant, tenant, "   ")
    empty = reads.search_nodes(elephant, "search-nobody", "widget")
    assert (empty.entities, empty.total_matched, empty.truncated) == ([], 0, False)


def test_search_nodes_finds_entities_by_their_observations(elephant: Elephant) -> None:
    tenant = "search-obs"
    ops.record(
        elephant,
        tenant,
        RecordIn(
            entities=[
                EntityIn(name="Frank", observations=["Frank's flight to Tokyo leaves in February"]),
                EntityIn(name="Gina", observations=["Gina grows tomatoes in her garden"]),
            ]
        ),
    )
    found = reads.search_nodes(elephant, tenant, "flight to Tokyo", limit=1)
    assert [e.name for e in found.entities] == ["Frank"]


def test_read_graph_pages(elephant: Elephant) -> None:
    tenant = "paging"
    names = [f"Page item {letter}" for letter in "gfedcba"]
    ops.record(
        elephant,
        tenant,
        RecordIn(
            entities=[EntityIn(name=name, observations=[f"about {name}"]) for name in names],
            relations=[RelationIn(source=names[0], relation_type="knows", target=names[1])],
        ),
    )
    seen, offsets, offset = [], [], 0
    while offset is not None:
        page = reads.read_graph(elephant, tenant, offset=offset, limit=3)
        assert page.total == 7 and page.limit == 3 and page.offset == offset
        assert len(page.entities) <= 3
        seen += [e.name for e in page.entities]
        offsets.append(page.next_offset)
        offset = page.next_offset
    assert offsets == [3, 6, None]
    assert seen == sorted(names)
    summary = reads.read_graph(elephant, tenant, limit=1, offset=5).entities[0]
    assert summary == EntitySummary(
        name="Page item f",
        entity_type="thing",
        domain="general",
        epistemic="unknown",
        observations=1,
        relations=1,
    )
    full = reads.read_graph(elephant, tenant, limit=1, offset=5, summary=False).entities[0]
    assert [o.content for o in full.observations] == ["about Page item f"]
    assert full.relations[0].relation_type == "knows"
    assert full.relations_total == 1 and full.valid_from is not None
    past_end = reads.read_graph(elephant, tenant, offset=50, limit=3)
    assert (past_end.entities, past_end.next_offset, past_end.total) == ([], None, 7)
    for bad in ({"offset": -1}, {"limit": 0}, {"limit": 201}):
        with pytest.raises(InvalidInput, match=next(iter(bad))):
            reads.read_graph(elephant, tenant, **bad)
    assert reads.read_graph(elephant, "paging-nobody").total == 0


def test_neighbourhood_hops(elephant: Elephant) -> None:
    tenant = "hops"
    ops.record(
        elephant,
        tenant,
        RecordIn(
            entities=[EntityIn(name=n) for n in ("Chain alpha", "Chain beta", "Chain gamma")],
            relations=[
                RelationIn(source="Chain alpha", relation_type="enables", target="Chain beta"),
                RelationIn(source="Chain beta", relation_type="enables", target="Chain gamma"),
            ],
        ),
    )
    one = reads.neighbourhood(elephant, tenant, "chain alpha", hops=1)
    two = reads.neighbourhood(elephant, tenant, "chain alpha", hops=2)
    assert {n.name for n in one.nodes} == {"Chain alpha", "Chain beta"}
    assert [(e.source, e.target) for e in one.edges] == [("Chain alpha", "Chain beta")]
    assert {n.name for n in two.nodes} == {"Chain alpha", "Chain beta", "Chain gamma"}
    assert len(two.edges) == 2
    capped = reads.neighbourhood(elephant, tenant, "chain alpha", hops=3, limit=2)
    assert len(capped.nodes) == 2 and capped.truncated is True
    assert len(reads.neighbourhood(elephant, tenant, None, limit=10).nodes) == 3
    for hops in (0, 4):
        with pytest.raises(InvalidInput, match="hops must be between 1 and 3"):
            reads.neighbourhood(elephant, tenant, "chain alpha", hops=hops)


# ------------------------------------------------------------------ hostile text


HOSTILE = [
    "O'Brien",
    "a $$ b $$",
    "x $cypher$ y",
    "}) RETURN e //",
    "'; DROP TABLE facts; --",
    'quote " and \\" escaped',
    "back\\slash \\n \\u0041",
    "ünïcödé Ünïcödé 😀 名前",
    "line one\nline two",
    "%s %(name)s {0}",
    "MATCH (n) DETACH DELETE n",
]


def test_hostile_names_and_observations_are_stored_literally(
    elephant: Elephant, graph_backend: Backend
) -> None:
    tenant = "hostile"
    _seed(elephant, tenant)
    ops.record(
        elephant,
        tenant,
        RecordIn(
            entities=[
                EntityIn(name=text, observations=[text, f"said: {text}"]) for text in HOSTILE
            ],
            relations=[
                RelationIn(source=HOSTILE[i], relation_type="mentions", target=HOSTILE[i + 1])
                for i in range(len(HOSTILE) - 1)
            ],
        ),
    )
    opened = reads.open_nodes(elephant, tenant, HOSTILE)
    assert opened.missing == []
    assert [node.name for node in opened.entities] == HOSTILE
    for text, node in zip(HOSTILE, opened.entities, strict=True):
        assert [o.content for o in node.observations] == [text, f"said: {text}"]
    first = opened.entities[0].relations
    assert [(r.source, r.target) for r in first] == [(HOSTILE[0], HOSTILE[1])]
    for text in HOSTILE:
        assert reads.search_nodes(elephant, tenant, text).entities[0].name == text

    # Harmless: the tables are there, the other entities intact, nothing leaked elsewhere.
    seeded = reads.open_nodes(elephant, tenant, ["Postgres", "AGE"]).entities
    assert [o.content for n in seeded for o in n.observations] == [
        "A database",
        "A graph extension",
    ]
    assert seeded[1].relations[0].target == "Postgres"
    counts = _counts(elephant, tenant)
    assert (counts["entities"], counts["relations"]) == (len(HOSTILE) + 2, len(HOSTILE))
    with elephant.db.tenant(tenant) as conn:
        names = {row[0] for row in conn.execute(f"SELECT name FROM {ENTITY_ROWS[graph_backend]}")}
        tables = conn.execute("SELECT to_regclass('facts'), to_regclass('memories')").fetchone()
    assert names == {*HOSTILE, "Postgres", "AGE"}
    assert tables == ("facts", "memories")
    ops.delete_entities(elephant, tenant, HOSTILE[:3])
    assert len(_entities(elephant, tenant)) == len(HOSTILE) - 1


# ------------------------------------------------------------------ tenants


def test_tenants_do_not_see_each_others_graph(elephant: Elephant, graph_backend: Backend) -> None:
    a, b = "iso-a", "iso-b"
    ops.record(
        elephant,
        a,
        RecordIn(
            entities=[
                EntityIn(name="Secret project", entity_type="task", observations=["Code red"]),
                EntityIn(name="Alice", entity_type="person"),
            ],
            relations=[RelationIn(source="Alice", relation_type="uses", target="Secret project")],
        ),
    )
    assert reads.search_nodes(elephant, b, "secret project").total_matched == 0  # no graph yet
    ops.record(elephant, b, RecordIn(entities=[EntityIn(name="Bob", observations=["Public"])]))

    assert reads.open_nodes(elephant, b, ["Secret project", "Alice"]).entities == []
    assert reads.search_nodes(elephant, b, "secret project").total_matched == 0
    assert reads.search_nodes(elephant, b, "code red").entities == []
    assert [e.name for e in reads.read_graph(elephant, b).entities] == ["Bob"]
    assert reads.neighbourhood(elephant, b, "alice", hops=3).nodes == []
    # Writes in B cannot reach A's entities either.
    with pytest.raises(InvalidInput, match="unknown entities: alice"):
        ops.create_relations(
            elephant, b, [RelationIn(source="Bob", relation_type="knows", target="Alice")]
        )
    with pytest.raises(InvalidInput, match="no active observation"):
        ops.invalidate_observations(
            elephant, b, [ObservationRefs(entity="Secret project", observations=["Code red"])]
        )
    assert ops.delete_entities(elephant, b, ["Alice"]).entities_deleted == 0
    assert reads.open_nodes(elephant, a, ["Alice"]).entities[0].relations_total == 1

    entities, relations = ENTITY_ROWS[graph_backend], RELATION_ROWS[graph_backend]

    def view(conn: Any, name: str) -> set[tuple[Any, ...]]:
        return {tuple(row) for row in conn.execute(f"SELECT tenant_id, name FROM {name}")}

    with elephant.db.tenant(b) as conn:
        assert view(conn, entities) == {(b, "Bob")}
        assert conn.execute(f"SELECT count(*) FROM {relations}").fetchone() == (0,)
        assert conn.execute("SELECT text FROM current_facts").fetchall() == [("Public",)]
    with elephant.db.tenant(a) as conn:
        assert view(conn, entities) == {(a, "Secret project"), (a, "Alice")}
    with elephant.db.connection() as conn:  # the app role with no tenant sees nothing
        assert conn.execute(f"SELECT count(*) FROM {entities}").fetchone() == (0,)
        conn.rollback()
    with elephant.db.admin_connection() as conn:  # the superuser sees every tenant
        rows = conn.execute(
            f"SELECT tenant_id, name FROM {entities} WHERE tenant_id IN (%s, %s)", (a, b)
        ).fetchall()
        found = conn.execute(
            f"SELECT tenant_id, source, relation, target FROM {relations} "
            "WHERE tenant_id IN (%s, %s)",
            (a, b),
        ).fetchall()
    assert set(rows) == {(a, "Secret project"), (a, "Alice"), (b, "Bob")}
    assert found == [(a, "Alice", "uses", "Secret project")]


def test_analyst_view_columns(elephant: Elephant, graph_backend: Backend) -> None:
    tenant = "views"
    _seed(elephant, tenant)
    with elephant.db.tenant(tenant) as conn:
        assert views_read(conn, graph_backend), "the analyst views miss this backend's rows"
    expected = {
        "graph_entities": {"name", "role", "domain", "epistemic", "valid_from", "valid_to",
                           "tenant_id"},
        "graph_relations": {"source", "relation", "target", "epistemic", "valid_from",
                            "valid_to", "tenant_id"},
        "current_facts": {"text", "observation_kind", "valid_from", "valid_to", "entity_keys",
                          "tenant_id"},
    }  # fmt: skip
    with elephant.db.tenant(tenant) as conn:
        # As `elephant sql --tenant` connects: the app role without ag_catalog on its path.
        conn.execute('SET LOCAL search_path = "$user", public')
        for view, columns in expected.items():
            cursor = conn.execute(f"SELECT * FROM {view} LIMIT 0")
            assert cursor.description is not None
            assert columns <= {c.name for c in cursor.description}, view
        entities = conn.execute(
            "SELECT name, role, domain, epistemic, valid_to, tenant_id, "
            "valid_from <= now() FROM graph_entities ORDER BY name"
        ).fetchall()
        relations = conn.execute(
            "SELECT source, relation, target, epistemic, valid_to FROM graph_relations"
        ).fetchall()
        facts = conn.execute(
            "SELECT text, observation_kind, entity_keys FROM current_facts ORDER BY text"
        ).fetchall()
    assert entities == [
        ("AGE", "artifact", "general", "unknown", None, tenant, True),
        ("Postgres", "artifact", "general", "unknown", None, tenant, True),
    ]
    assert relations == [("AGE", "part_of", "Postgres", "unknown", None)]
    assert facts == [
        ("A database", "note", ["postgres"]),
        ("A graph extension", "note", ["age"]),
    ]
