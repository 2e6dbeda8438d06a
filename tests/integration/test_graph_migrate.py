"""`elephant graph migrate --to relational|age`: a tenant's graph copied between the
backends with every entity and relation (closed ones too), idempotently; afterwards a
runtime with graph.backend set to the target reads the same graph."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from app.cli import main
from app.errors import InvalidInput
from app.services.graph import operations as ops
from app.services.graph import reads
from app.services.graph.models import (
    DecisionIn,
    EntityIn,
    RecordIn,
    RelationIn,
    RelationRef,
    ReviseIn,
)
from app.services.graph.transfer import migrate_graph
from app.services.runtime import Elephant
from tests.conftest import needs_age
from tests.graph_backends import with_backend

pytestmark = needs_age


def _seed(elephant: Elephant, tenant: str) -> None:
    ops.record(
        elephant,
        tenant,
        RecordIn(
            entities=[
                EntityIn(name="Billing", entity_type="artifact", domain="software",
                         observations=["Runs nightly"]),
                EntityIn(name="Cron", entity_type="artifact"),
                EntityIn(name="Stripe", entity_type="organization", epistemic="assertion"),
                EntityIn(name="Ops team", entity_type="team"),
            ],
            relations=[
                RelationIn(source="Billing", relation_type="uses", target="Cron"),
                RelationIn(source="Billing", relation_type="depends_on", target="Stripe",
                           valid_from="2024-03-01T00:00:00Z"),
                RelationIn(source="Ops team", relation_type="knows", target="Billing"),
            ],
        ),
    )  # fmt: skip
    ops.invalidate_relations(
        elephant, tenant, [RelationRef(source="Billing", relation_type="uses", target="Cron")]
    )
    ops.revise(
        elephant,
        tenant,
        ReviseIn(entity="Billing", superseded_by="Billing v2",
                 superseding_entity=EntityIn(name="Billing v2", entity_type="artifact")),
    )  # fmt: skip
    ops.record_decision(
        elephant, tenant, DecisionIn(name="Queue", decided="Postgres", because="One system")
    )


def _graph(elephant: Elephant, tenant: str) -> tuple[list[Any], list[Any]]:
    """Every entity and every relation (current and closed) with all their fields."""
    store = elephant.graph
    assert store is not None
    with elephant.db.tenant(tenant) as conn:
        entities, _ = store.page(conn, tenant, 0, 1000)
        relations = store.relations(conn, tenant, [e.key for e in entities], active_only=False)
    dedup = {(r.triple, json.dumps(r.properties, sort_keys=True)) for r in relations}
    return [e.__dict__ for e in entities], sorted(dedup)


def _hood(elephant: Elephant, query: str) -> tuple[set[str], list[tuple[str, str, str]], bool]:
    found = reads.neighbourhood(elephant, "mig-a", query, hops=3)
    edges = sorted((e.source, e.relation_type, e.target) for e in found.edges)
    return {n.name for n in found.nodes}, edges, found.truncated


def _copied(report: Any, tenant: str) -> tuple[int, int, int, int]:
    (row,) = [t for t in report.tenants if t.tenant == tenant]
    return row.entities_copied, row.relations_copied, row.entities_existing, row.relations_existing


def test_age_to_relational_and_back(elephant: Elephant) -> None:
    age = with_backend(elephant, "age")
    relational = with_backend(elephant, "relational")
    assert age.graph is not None and age.graph.backend == "age"
    _seed(age, "mig-a")
    ops.record(age, "mig-b", RecordIn(entities=[EntityIn(name="Lonely")]))
    before = _graph(age, "mig-a")
    entities, relations = len(before[0]), len(before[1])
    # uses (invalidated), depends_on and knows (closed by the revise), supersedes (current)
    assert (entities, relations) == (6, 4)

    report = migrate_graph(elephant, "relational")
    assert (report.source, report.target) == ("age", "relational")
    assert _copied(report, "mig-a") == (entities, relations, 0, 0)
    assert _copied(report, "mig-b") == (1, 0, 0, 0)
    assert _graph(relational, "mig-a") == before
    closed = [r for r in _graph(relational, "mig-a")[1] if '"valid_to"' in r[1]]
    assert len(closed) == 3
    # what the services read is the same on both backends
    for name in ("Billing", "Billing v2", "Stripe", "Queue"):
        via_age = reads.open_nodes(age, "mig-a", [name]).to_dict()
        assert reads.open_nodes(relational, "mig-a", [name]).to_dict() == via_age
    assert _hood(relational, "billing v2") == _hood(age, "billing v2")

    again = migrate_graph(elephant, "relational")
    assert _copied(again, "mig-a") == (0, 0, entities, relations)
    assert again.entities_copied == again.relations_copied == 0

    # New writes on the relational side go back to AGE: only they are copied.
    ops.record(
        relational,
        "mig-a",
        RecordIn(
            entities=[EntityIn(name="Ledger")],
            relations=[RelationIn(source="Ledger", relation_type="part_of", target="Billing v2")],
        ),
    )
    back = migrate_graph(elephant, "age", "mig-a")
    assert [t.tenant for t in back.tenants] == ["mig-a"]
    assert _copied(back, "mig-a") == (1, 1, entities, relations)
    assert _graph(age, "mig-a") == _graph(relational, "mig-a")
    assert _copied(migrate_graph(elephant, "age", "mig-a"), "mig-a") == (0, 0, 7, 5)
    with pytest.raises(InvalidInput, match="tenant"):
        migrate_graph(elephant, "age", "Not A Tenant!")


def test_the_cli_copies_and_prints_counts(elephant: Elephant) -> None:
    relational = with_backend(elephant, "relational")
    ops.record(
        relational,
        "mig-cli",
        RecordIn(
            entities=[EntityIn(name="Parser"), EntityIn(name="OFX")],
            relations=[RelationIn(source="Parser", relation_type="uses", target="OFX")],
        ),
    )
    settings = elephant.settings
    env = {
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
        "ELEPHANT_LOG_LEVEL": "WARNING",
    }
    runner = CliRunner()
    args = ["graph", "migrate", "--to", "age", "--tenant", "mig-cli"]
    done = runner.invoke(main, args, env=env)
    assert done.exit_code == 0, done.output
    body = json.loads(done.stdout)
    assert (body["source"], body["target"]) == ("relational", "age")
    assert body["tenants"] == [
        {
            "tenant": "mig-cli",
            "entities_copied": 2,
            "entities_updated": 0,
            "entities_existing": 0,
            "relations_copied": 1,
            "relations_existing": 0,
        }
    ]
    assert "set graph.backend = age" in done.stderr
    node = reads.open_nodes(with_backend(elephant, "age"), "mig-cli", ["Parser"]).entities[0]
    assert [r.target for r in node.relations] == ["OFX"]
    refused = runner.invoke(main, ["graph", "migrate", "--to", "neo4j"], env=env)
    assert refused.exit_code == 2 and "neo4j" in refused.output
