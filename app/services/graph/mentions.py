"""Entity links of memories: which people, places, organisations, products and dates a
window or a note names (memory_entities, migration 0020), so search can follow an entity
from a hit to the other memories that name it.

Written when a memory's facts are extracted, with the offline recogniser whichever
extractor made the facts (app/services/facts/offline/entities.py), and by the backfill
job ``link_entities`` for memories stored before. A memory linked again holds what its
text names now. A speaker's label is no link ("Caroline:" opens half a conversation's
turns); the names inside the turns are.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from app.db.resources import load_sql
from app.db.runtime import Connection
from app.services.facts.offline.dating import rewrite_dates
from app.services.facts.offline.entities import (
    Mention,
    candidate_keys,
    capitalised_evidence,
    question_entities,
    recognise,
)
from app.services.jobs import queue
from app.services.jobs.queue import Job
from app.services.runtime import Elephant

KNOWN_LIMIT = 5000  # candidate names whose known type one linking looks up
BACKFILL_BATCH = 500
_NIL = uuid.UUID(int=0)


@dataclass
class _Memory:
    """One memory's turns (speaker, text, when said), and its conversation's speakers."""

    turns: list[tuple[str | None, str, datetime | None]] = field(default_factory=list)
    people: frozenset[str] = frozenset()


def question_entity_keys(question: str) -> list[str]:
    """The entity keys a question names, by the grammar that links memories and facts."""
    return list(dict.fromkeys(m.key for m in question_entities(question)))


def memory_mentions(
    turns: Sequence[tuple[str | None, str, datetime | None]],
    people: frozenset[str],
    known: dict[str, str],
) -> list[tuple[Mention, int]]:
    """Every entity the turns name, with how often, first mention's name and type kept.
    Relative dates are read as absolute ones against when each turn was said."""
    evidence = capitalised_evidence(text for _, text, _ in turns)
    first: dict[str, Mention] = {}
    counts: Counter[str] = Counter()
    for _, text, when in turns:
        dated = rewrite_dates(text, when)[0] if when is not None else text
        for mention in recognise(dated, people, known, evidence):
            first.setdefault(mention.key, mention)
            counts[mention.key] += 1
    return [(first[key], counts[key]) for key in first if 0 < len(key) <= 200]


def known_entities(conn: Connection, tenant: str, texts: Iterable[str]) -> dict[str, str]:
    """Entity key -> type, for the capitalised names in texts that the tenant's memories
    already link with a type."""
    keys = sorted(candidate_keys(texts))[:KNOWN_LIMIT]
    if not keys:
        return {}
    rows = conn.execute(
        load_sql("graph/known_entities.sql"), {"tenant": tenant, "keys": keys}
    ).fetchall()
    return {str(key): str(kind) for key, kind in rows}


def link_memories(conn: Connection, tenant: str, memory_ids: Iterable[str]) -> int:
    """(Re)write the entity links of these memories; returns the links written."""
    ids = sorted(set(memory_ids))
    if not ids:
        return 0
    memories: dict[str, _Memory] = {}
    for memory_id, speaker, text, when, speakers in conn.execute(
        load_sql("graph/memory_texts.sql"), {"tenant": tenant, "ids": ids}
    ).fetchall():
        memory = memories.setdefault(str(memory_id), _Memory())
        memory.people = frozenset(str(s).lower() for s in speakers if s)
        memory.turns.append((speaker, str(text or ""), when))
    known = known_entities(
        conn, tenant, (text for memory in memories.values() for _, text, _ in memory.turns)
    )
    rows = []
    for memory_id, memory in memories.items():
        for mention, count in memory_mentions(memory.turns, memory.people, known):
            rows.append((tenant, memory_id, mention.key, mention.name[:200], mention.type, count))
    with conn.cursor() as cursor:
        cursor.execute(
            "DELETE FROM memory_entities WHERE tenant_id = %s AND memory_id = ANY(%s::uuid[])",
            (tenant, ids),
        )
        if rows:
            cursor.executemany(load_sql("graph/insert_memory_entities.sql"), rows)
    return len(rows)


def backfill(elephant: Elephant, conn: Connection, job: Job) -> int:
    """The ``link_entities`` job: link one batch of the tenant's memories (in id order,
    after payload["after"]); a full batch queues the next one."""
    after = str(job.payload.get("after") or _NIL)
    ids = [
        str(row[0])
        for row in conn.execute(
            load_sql("graph/unlinked_memories.sql"),
            {"tenant": job.tenant_id, "after": after, "limit": BACKFILL_BATCH},
        ).fetchall()
    ]
    written = link_memories(conn, job.tenant_id, ids)
    if len(ids) == BACKFILL_BATCH:
        queue.enqueue(
            conn,
            job.tenant_id,
            job.kind,
            {"after": ids[-1]},
            max_attempts=elephant.settings.worker.max_attempts,
        )
    return written
