"""The knowledge graph: vocabulary, atomic record, decisions, revise, bounded reads.

Real embedded Postgres with Apache AGE, the real embedding model; nothing mocked.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.errors import InvalidInput
from app.services.graph import operations as ops
from app.services.graph import reads
from app.services.graph import vocabulary as vocab
from app.services.graph.models import (
    EntityIn,
    RecordIn,
    RelationIn,
)
from app.services.runtime import Elephant


def _entities(elephant: Elephant, tenant: str) -> dict[str, Any]:
    page = reads.read_graph(elephant, tenant, offset=0, limit=500, summary=False)
    return {entity["name"]: entity for entity in page["entities"]}


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
    assert result["entities_created"] == ["Elephant", "pgvector"]
    assert result["relations_created"] == 1
    assert result["observations_added"] == 1
    opened = reads.open_nodes(elephant, "rec", ["elephant"])
    node = opened["entities"][0]
    assert node["entity_type"] == "artifact"
    assert [o["content"] for o in node["observations"]] == ["Stores memories in Postgres"]
    assert node["relations"][0]["relation_type"] == "depends_on"
    assert node["relations"][0]["target"] == "pgvector"

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
    assert again["entities_created"] == []
    assert again["entities_merged"] == ["Elephant"]
    assert again["relations_created"] == 0 and again["relations_existing"] == 1
    assert again["observations_added"] == 0 and again["observations_duplicate"] == 1
