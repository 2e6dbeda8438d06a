"""Entities of extracted facts join the graph; questions that name entities reach their facts.

At ingest, every entity an extractor names becomes (or stays) a vertex, the
fact is linked to it (`about` its subject, `mentions` the others) and the
subject gets a `mentions` edge to each other entity. At search, the entities a
question names and their 1-hop neighbours are looked up for the graph lane.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from datetime import UTC, datetime

import psycopg

from app.db.resources import load_sql
from app.db.runtime import Connection
from app.errors import ElephantError
from app.services.facts.model import ExtractedFact
from app.services.graph import vocabulary as vocab
from app.services.graph.store import Entity, GraphStore, Relation, entity_key
from app.services.runtime import Elephant

log = logging.getLogger(__name__)

MAX_NGRAM = 4
MAX_LANE_ENTITIES = 60
_TOKEN = re.compile(r"[\w][\w&.+-]*", re.UNICODE)
_POSSESSIVE = re.compile(r"['\u2019]s\b", re.IGNORECASE)
_STOPWORDS = frozenset(
    [
        "about", "after", "before", "can", "could", "not", "should", "than", "then", "there",
        "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from", "had",
        "has", "have", "he", "her", "his", "how", "i", "in", "is", "it", "its", "me", "my", "of",
        "on", "or", "our", "she", "so", "that", "the", "their", "them", "they", "this", "to",
        "was", "we", "were", "what", "when", "where", "which", "who", "whom", "why", "will",
        "with", "would", "you", "your",
    ]
)  # fmt: skip


def link_facts(
    elephant: Elephant,
    conn: Connection,
    tenant: str,
    stored: Sequence[tuple[str, ExtractedFact]],
) -> int:
    """Upsert entities and links for newly stored facts; a graph failure never loses the facts."""
    store = elephant.graph
    if not stored or store is None or not elephant.settings.graph.link_ingest:
        return 0
    try:
        store.ensure(tenant)
        with conn.transaction():  # a savepoint: the facts survive a graph failure
            return _link(store, conn, tenant, stored)
    except (ElephantError, psycopg.Error) as exc:
        log.warning("entity linking skipped for tenant %s: %s", tenant, exc)
        return 0


def _link(
    store: GraphStore, conn: Connection, tenant: str, stored: Sequence[tuple[str, ExtractedFact]]
) -> int:
    wanted: dict[str, tuple[str, str]] = {}  # key -> (name, role)
    links: list[tuple[str, str, str, str]] = []
    pairs: dict[tuple[str, str], None] = {}
    for fact_id, fact in stored:
        subject = entity_key(fact.subject) if fact.subject else None
        keys = []
        for ref in fact.entities:
            key = entity_key(ref.name)
            if key and len(key) <= 200:
                wanted.setdefault(key, (ref.name.strip(), vocab.role_for_extracted(ref.type)))
                keys.append(key)
        if subject and subject not in wanted and fact.subject:
            wanted[subject] = (fact.subject.strip(), "thing")
        for key in dict.fromkeys(keys + ([subject] if subject else [])):
            links.append((tenant, fact_id, key, "about" if key == subject else "mentions"))
            if subject and key != subject:
                pairs[(subject, key)] = None
    if not wanted:
        return 0
    existing = store.entities(conn, tenant, list(wanted))
    stamp = datetime.now(UTC).isoformat()
    store.create_entities(
        conn,
        tenant,
        [
            Entity(key=key, name=name, role=role, domain="personal" if role == "person" else
                   "general", epistemic="assertion", source="ingest", created_at=stamp,
                   updated_at=stamp, valid_from=stamp)
            for key, (name, role) in wanted.items()
            if key not in existing
        ],
    )  # fmt: skip
    subjects = sorted({source for source, _ in pairs})
    active = {r.triple for r in store.relations(conn, tenant, subjects, active_only=True)}
    store.create_relations(
        conn,
        tenant,
        [
            Relation(source, "mentions", target, {"valid_from": stamp, "recorded_at": stamp,
                     "epistemic": "assertion", "source": "ingest"})
            for source, target in pairs
            if (source, "mentions", target) not in active
        ],
    )  # fmt: skip
    with conn.cursor() as cursor:
        cursor.executemany(
            load_sql("graph/link_facts.sql"),
            links,
        )
    return len(links)


def query_candidates(query: str) -> list[str]:
    """Every 1-4 word span of the question as an entity key ('Caroline's' → 'caroline')."""
    tokens = [t.strip(".-+") for t in _TOKEN.findall(_POSSESSIVE.sub("", query))]
    tokens = [t for t in tokens if t]
    spans: dict[str, None] = {}
    for size in range(1, MAX_NGRAM + 1):
        for start in range(len(tokens) - size + 1):
            words = tokens[start : start + size]
            if size == 1 and words[0].casefold() in _STOPWORDS:
                continue
            spans[entity_key(" ".join(words))] = None
    return list(spans)


def lane_entities(
    elephant: Elephant, conn: Connection, tenant: str, query: str
) -> tuple[list[str], list[str]]:
    """(entities the query names, their 1-hop neighbours): the graph lane's entity keys.

    Neighbours come through recorded relations, not through the `mentions` edges
    ingest adds between co-occurring names.
    """
    store = elephant.graph
    if store is None or not store.exists(conn, tenant):
        return [], []
    found, relations = store.entities_with_relations(
        conn, tenant, query_candidates(query), active_only=True
    )
    named = list(found)
    neighbours: list[str] = []
    for relation in relations:
        if relation.relation_type == "mentions" and relation.properties.get("source") == "ingest":
            # Co-occurrence found by the extractor: the dense lanes see it already, and
            # following it made LoCoMo recall@1 worse (0.509 → 0.487); curated edges count.
            continue
        for key in (relation.source, relation.target):
            if key not in named and key not in neighbours:
                neighbours.append(key)
    return named, neighbours[: max(MAX_LANE_ENTITIES - len(named), 0)]
