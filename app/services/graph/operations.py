"""Graph writes: record, decisions, revisions, invalidations and deletions.

Every operation validates its whole input first (vocabulary, sizes, that each
relation's ends exist or are created by the same call), embeds observation
texts outside the transaction, then writes graph and observation rows in ONE
tenant transaction: one bad item and nothing is written. Revising never
deletes: it closes the old observation's validity and links the replacement
with a `supersedes` edge; only the delete_* operations remove anything. The
validation and keying of a call's input is `app.services.graph.planning`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from app.db.resources import load_sql
from app.db.runtime import Connection
from app.errors import CapabilityMissing, InvalidInput
from app.providers.embedder_errors import EmbedderError
from app.services.graph import vocabulary as vocab
from app.services.graph.models import (
    DecisionIn,
    DecisionResult,
    EntitiesDeleted,
    EntityIn,
    GraphObservation,
    ObservationIn,
    ObservationRefs,
    ObservationsDeleted,
    ObservationsIn,
    ObservationsInvalidated,
    RecordIn,
    RecordResult,
    RelationIn,
    RelationRef,
    RelationsDeleted,
    RelationsInvalidated,
    ReviseIn,
    RevisionResult,
)
from app.services.graph.planning import (
    ObservationPlan,
    Plan,
    now_iso,
    plan_record,
    required_key,
)
from app.services.graph.store import Entity, GraphStore, Relation, Triple, entity_key
from app.services.jobs import queue
from app.services.ops import metrics
from app.services.runtime import Elephant

BACKFILL_JOB = "embed_memories"


def graph_store(elephant: Elephant) -> GraphStore:
    """The graph in use (graph.backend), or a 503 that says why there is none."""
    store = elephant.graph
    if store is None:
        raise CapabilityMissing(elephant.graph_decision.reason)
    return store


# ------------------------------------------------------------------ writing


def _embed_observations(
    elephant: Elephant, observations: Sequence[ObservationPlan], names: dict[str, str]
) -> list[Any]:
    """Vectors carry the entity's name, so 'chose pgvector' is found by the decision's name."""
    if not observations:
        return []
    texts = [
        f"{names.get(o.entity, o.entity)}: {o.content}"
        if o.kind == "note"
        else f"{names.get(o.entity, o.entity)} ({o.kind}): {o.content}"
        for o in observations
    ]
    try:
        with metrics.embedding("document", len(texts)):
            return list(elephant.embedder.embed_documents(texts))
    except EmbedderError:
        return [None] * len(texts)  # stored without vectors, backfilled by a job


def _apply(
    elephant: Elephant,
    store: GraphStore,
    conn: Connection,
    tenant: str,
    plan: Plan,
    vectors: Sequence[Any],
    *,
    source: str,
) -> RecordResult:
    existing = store.entities(conn, tenant, plan.referenced())
    endpoints = {r.source for r in plan.relations} | {r.target for r in plan.relations}
    endpoints |= {o.entity for o in plan.observations}
    missing = sorted(key for key in endpoints if key not in existing and key not in plan.entities)
    if missing:
        raise InvalidInput(
            f"unknown entities: {', '.join(missing)}. Create them first (record with "
            "entities, or create_entities), or add them to the same call; nothing was written",
            details={"missing": missing},
        )
    stamp = plan.stamp
    created, merged = [], []
    for key, item in plan.entities.items():
        old = existing.get(key)
        if old is None:
            created.append(
                Entity(
                    key=key,
                    name=item.name,
                    role=item.role or "thing",
                    domain=item.domain or "general",
                    epistemic=item.epistemic or vocab.DEFAULT_EPISTEMIC,
                    source=source,
                    created_at=stamp,
                    updated_at=stamp,
                    valid_from=stamp,
                )
            )
            continue
        new = replace(
            old,
            role=item.role or old.role,
            domain=item.domain or old.domain,
            epistemic=item.epistemic or old.epistemic,
            source=source if source == "record" else old.source,
        )
        if new != old:
            merged.append(replace(new, updated_at=stamp))
        else:
            merged.append(old)
    store.create_entities(conn, tenant, created)
    store.update_entities(conn, tenant, [e for e in merged if e.updated_at == stamp])
    names = {**{k: e.name for k, e in existing.items()}, **{e.key: e.name for e in created}}

    active = {r.triple for r in store.relations(conn, tenant, sorted(endpoints), active_only=True)}
    new_relations, seen = [], set(active)
    for relation in plan.relations:
        if relation.triple not in seen:
            seen.add(relation.triple)
            new_relations.append(
                replace(relation, properties={**relation.properties, "source": source})
            )
    store.create_relations(conn, tenant, new_relations)

    added = insert_observations(
        conn, tenant, plan.observations, vectors, names, source=source, stamp=stamp
    )
    if any(vector is None for vector in vectors):
        queue.enqueue(
            conn,
            tenant,
            BACKFILL_JOB,
            {"reason": "graph observations"},
            max_attempts=elephant.settings.worker.max_attempts,
        )
    return RecordResult(
        entities_created=[e.name for e in created],
        entities_merged=[e.name for e in merged],
        relations_created=len(new_relations),
        relations_existing=len(plan.relations) - len(new_relations),
        observations_added=len(added),
        observations_duplicate=len(plan.observations) - len(added),
        observation_ids=added,
    )


def insert_observations(
    conn: Connection,
    tenant: str,
    observations: Sequence[ObservationPlan],
    vectors: Sequence[Any],
    names: dict[str, str],
    *,
    source: str,
    stamp: str,
) -> list[str]:
    """Observation facts plus their `about` links; an active duplicate is skipped."""
    added: list[str] = []
    if not observations:
        return added
    valid_from = datetime.fromisoformat(stamp)
    with conn.cursor() as cursor:
        cursor.executemany(
            load_sql("graph/insert_observation.sql"),
            [
                (
                    tenant,
                    names.get(o.entity, o.entity),
                    o.content,
                    vector,
                    json.dumps([{"name": names.get(o.entity, o.entity), "key": o.entity}]),
                    valid_from,
                    f"graph:{source}",
                    o.kind,
                    o.observation_key,
                )
                for o, vector in zip(observations, vectors, strict=True)
            ],
            returning=True,
        )
        links = []
        for observation in observations:
            row = cursor.fetchone()
            if row is not None:
                added.append(str(row[0]))
                links.append((tenant, row[0], observation.entity, "about"))
            cursor.nextset()
        cursor.executemany(load_sql("graph/link_facts.sql"), links)
    return added


def _write(elephant: Elephant, tenant: str, plan: Plan, *, source: str) -> RecordResult:
    store = graph_store(elephant)
    names = {key: item.name for key, item in plan.entities.items()}
    vectors = _embed_observations(elephant, plan.observations, names)
    store.ensure(tenant)
    with elephant.db.tenant(tenant) as conn:
        return _apply(elephant, store, conn, tenant, plan, vectors, source=source)


# ------------------------------------------------------------------ public operations


def record(elephant: Elephant, tenant: str, request: RecordIn) -> RecordResult:
    """Entities, relations and observations in one call, all or nothing."""
    return _write(elephant, tenant, plan_record(elephant, request), source="record")


def _require(items: Sequence[object], name: str) -> None:
    if not items:
        raise InvalidInput(f"{name}: give at least one")


def create_entities(elephant: Elephant, tenant: str, entities: list[EntityIn]) -> RecordResult:
    _require(entities, "entities")
    return record(elephant, tenant, RecordIn(entities=entities))


def create_relations(elephant: Elephant, tenant: str, relations: list[RelationIn]) -> RecordResult:
    _require(relations, "relations")
    return record(elephant, tenant, RecordIn(relations=relations))


def add_observations(
    elephant: Elephant, tenant: str, observations: list[ObservationsIn]
) -> RecordResult:
    _require(observations, "observations")
    return record(elephant, tenant, RecordIn(observations=observations))


def record_decision(elephant: Elephant, tenant: str, decision: DecisionIn) -> DecisionResult:
    """The decision, its reason and every rejected alternative as separate observations."""
    observations: list[str | ObservationIn] = [
        ObservationIn(content=decision.decided, kind="decided"),
        ObservationIn(content=decision.because, kind="because"),
        *(ObservationIn(content=item, kind="rejected") for item in decision.rejected),
    ]
    request = RecordIn(
        entities=[
            EntityIn(
                name=decision.name,
                entity_type="decision",
                domain=decision.domain,
                epistemic=decision.epistemic,
                observations=observations,
            )
        ]
    )
    plan = plan_record(elephant, request)
    if decision.supersedes is None:
        result: RecordResult = _write(elephant, tenant, plan, source="record")
    else:
        revision = ReviseIn(
            entity=decision.supersedes,
            superseded_by=decision.name,
            reason=f"superseded by the decision {decision.name!r}",
        )
        result = _revise(elephant, tenant, revision, plan)
    return DecisionResult(**msgspec.structs.asdict(result))


def revise(elephant: Elephant, tenant: str, request: ReviseIn) -> RevisionResult:
    """Invalidate what is no longer true and link its replacement, in one transaction."""
    plan = Plan()
    if request.superseding_entity is not None:
        if entity_key(request.superseding_entity.name) != entity_key(request.superseded_by):
            raise InvalidInput(
                "superseding_entity.name must be the entity named in superseded_by "
                f"({request.superseded_by!r})"
            )
        plan = plan_record(elephant, RecordIn(entities=[request.superseding_entity]))
    return _revise(elephant, tenant, request, plan)


def _revise(elephant: Elephant, tenant: str, request: ReviseIn, plan: Plan) -> RevisionResult:
    old = required_key(request.entity, "entity")
    new = required_key(request.superseded_by, "superseded_by")
    if old == new:
        raise InvalidInput("an entity cannot supersede itself: name a different superseded_by")
    stamp = plan.stamp
    plan.relations.append(
        Relation(new, "supersedes", old, {"valid_from": stamp, "recorded_at": stamp,
                                          "epistemic": "assertion"})
    )  # fmt: skip
    store = graph_store(elephant)
    names = {key: item.name for key, item in plan.entities.items()}
    vectors = _embed_observations(elephant, plan.observations, names)
    store.ensure(tenant)
    with elephant.db.tenant(tenant) as conn:
        if not store.entities(conn, tenant, [old]):
            raise InvalidInput(f"entity {request.entity!r} does not exist: nothing to revise")
        result = _apply(elephant, store, conn, tenant, plan, vectors, source="record")
        relations_closed: int | UnsetType = UNSET
        if request.observations:
            ids = _match_observations(conn, tenant, old, request.entity, request.observations)
        else:
            # The whole entity is superseded: its observations and its current relations
            # (all but the new supersedes edge) end now, kept as history.
            ids = [observation.id for observation in active_observations(conn, tenant, [old])[old]]
            entity = store.entities(conn, tenant, [old])[old]
            store.update_entities(conn, tenant, [replace(entity, valid_to=stamp, updated_at=stamp)])
            ending = [
                r.triple
                for r in store.relations(conn, tenant, [old], active_only=True)
                if r.triple != (new, "supersedes", old)
            ]
            relations_closed = store.invalidate_relations(conn, tenant, ending, stamp)
        closed = _close_facts(
            conn,
            tenant,
            ids,
            status="superseded",
            reason=request.reason,
            by_entity=request.superseded_by,
        )
    return RevisionResult(
        **msgspec.structs.asdict(result),
        relations_closed=relations_closed,
        revised=request.entity,
        superseded_by=request.superseded_by,
        observations_invalidated=closed,
    )


def invalidate_observations(
    elephant: Elephant, tenant: str, items: list[ObservationRefs], reason: str | None = None
) -> ObservationsInvalidated:
    """No longer true: validity closed, row kept (search hides it unless include_expired)."""

    def close(conn: Connection, ids: list[str]) -> int:
        return _close_facts(conn, tenant, ids, status="retracted", reason=reason, by_entity=None)

    closed = _each_item(elephant, tenant, items, close)
    return ObservationsInvalidated(observations_invalidated=closed)


def invalidate_relations(
    elephant: Elephant, tenant: str, relations: list[RelationRef]
) -> RelationsInvalidated:
    """No longer true: valid_to set on the current relation, the edge kept as history."""
    store = graph_store(elephant)
    _require(relations, "relations")
    triples = _triples(relations)
    with elephant.db.tenant(tenant) as conn:
        if not store.exists(conn, tenant):
            raise InvalidInput("this tenant has no graph yet: nothing to invalidate")
        current = {
            r.triple
            for r in store.relations(
                conn, tenant, sorted({t[0] for t in triples}), active_only=True
            )
        }
        missing = [t for t in triples if t not in current]
        if missing:
            listed = ", ".join(f"{s} -{t}-> {d}" for s, t, d in missing[:5])
            raise InvalidInput(
                f"no current relation {listed}: name current relations (source, "
                "relation_type, target); nothing was changed",
                details={"missing": [list(t) for t in missing]},
            )
        closed = store.invalidate_relations(conn, tenant, triples, now_iso())
    return RelationsInvalidated(relations_invalidated=closed)


def delete_observations(
    elephant: Elephant, tenant: str, items: list[ObservationRefs]
) -> ObservationsDeleted:
    """Removes the rows (for mistakes and erasure); prefer invalidate_observations."""

    def delete(conn: Connection, ids: list[str]) -> int:
        return conn.execute(
            "DELETE FROM facts WHERE tenant_id = %s AND id = ANY(%s)", (tenant, ids)
        ).rowcount

    deleted = _each_item(elephant, tenant, items, delete)
    return ObservationsDeleted(observations_deleted=deleted)


def delete_entities(elephant: Elephant, tenant: str, names: list[str]) -> EntitiesDeleted:
    """Entity, its relations and its observations go; facts that merely mention it stay."""
    store = graph_store(elephant)
    keys = [required_key(name, "names") for name in names]
    with elephant.db.tenant(tenant) as conn:
        if not store.exists(conn, tenant):
            return EntitiesDeleted(entities_deleted=0, missing=names)
        found = store.entities(conn, tenant, keys)
        params = {"tenant": tenant, "keys": list(found)}
        conn.execute(
            load_sql("graph/delete_observations.sql"),
            params,
        )
        conn.execute(
            "DELETE FROM fact_entities WHERE tenant_id = %(tenant)s AND entity_key = ANY(%(keys)s)",
            params,
        )
        deleted = store.delete_entities(conn, tenant, list(found))
    missing = [name for name, key in zip(names, keys, strict=True) if key not in found]
    return EntitiesDeleted(entities_deleted=deleted, missing=missing)


def delete_relations(
    elephant: Elephant, tenant: str, relations: list[RelationRef]
) -> RelationsDeleted:
    store = graph_store(elephant)
    triples = _triples(relations)
    with elephant.db.tenant(tenant) as conn:
        if not store.exists(conn, tenant):
            return RelationsDeleted(relations_deleted=0)
        deleted = store.delete_relations(conn, tenant, triples)
    return RelationsDeleted(relations_deleted=deleted)


def _triples(relations: Sequence[RelationRef]) -> list[Triple]:
    return [
        (
            required_key(r.source, "source"),
            vocab.relation_type(r.relation_type),
            required_key(r.target, "target"),
        )
        for r in relations
    ]


# ------------------------------------------------------------------ observation rows


def active_observations(
    conn: Connection, tenant: str, keys: Sequence[str], as_of: datetime | None = None
) -> dict[str, list[GraphObservation]]:
    """Observations true now (status active), or at ``as_of``: inside their validity,
    whatever happened to them since (an invalidated one was true until its valid_to)."""
    rows = conn.execute(
        load_sql("graph/active_observations.sql"),
        {"tenant": tenant, "keys": list(keys), "as_of": as_of},
    ).fetchall()
    found: dict[str, list[GraphObservation]] = {key: [] for key in keys}
    then = as_of is not None  # a read of the past also says how each one ended
    for key, fact_id, text, kind, source, valid_from, valid_to, recorded_at, status in rows:
        found[key].append(
            GraphObservation(
                id=str(fact_id),
                content=text,
                kind=kind,
                source=source,
                valid_from=valid_from.isoformat() if valid_from else None,
                recorded_at=recorded_at.isoformat(),
                valid_to=(valid_to.isoformat() if valid_to else None) if then else UNSET,
                status_now=status if then else UNSET,
            )
        )
    return found


def _each_item(
    elephant: Elephant,
    tenant: str,
    items: list[ObservationRefs],
    act: Callable[[Connection, list[str]], int],
) -> int:
    """``act`` on each item's observation ids in one tenant transaction; the rows it
    changed, summed (a graph must be available and ``items`` not empty)."""
    graph_store(elephant)
    _require(items, "observations")
    changed = 0
    with elephant.db.tenant(tenant) as conn:
        for item in items:
            changed += act(conn, _item_observations(conn, tenant, item))
    return changed


def _item_observations(conn: Connection, tenant: str, item: ObservationRefs) -> list[str]:
    """The ids of an item's observations of its entity (by id or by text)."""
    return _match_observations(
        conn, tenant, required_key(item.entity, "entity"), item.entity, item.observations
    )


def _match_observations(
    conn: Connection, tenant: str, key: str, name: str, wanted: Sequence[str]
) -> list[str]:
    active = active_observations(conn, tenant, [key])[key]
    by_text = {" ".join(o.content.casefold().split()): o.id for o in active}
    by_id = {o.id for o in active}
    ids, unknown = [], []
    for item in wanted:
        if item in by_id:
            ids.append(item)
        elif (found := by_text.get(" ".join(item.casefold().split()))) is not None:
            ids.append(found)
        else:
            unknown.append(item)
    if unknown:
        listed = "; ".join(o.content[:80] for o in active[:10]) or "none"
        raise InvalidInput(
            f"{name!r} has no active observation {unknown[0]!r}: name one of its active "
            f"observations by text or id (active: {listed}); nothing was changed",
            details={"unknown": unknown},
        )
    return ids


def _close_facts(
    conn: Connection,
    tenant: str,
    ids: Sequence[str],
    *,
    status: str,
    reason: str | None,
    by_entity: str | None,
) -> int:
    if not ids:
        return 0
    note = {k: v for k, v in {"reason": reason, "superseded_by_entity": by_entity}.items() if v}
    return conn.execute(
        load_sql("graph/close_facts.sql"),
        (status, json.dumps(note), tenant, list(ids)),
    ).rowcount
