"""The extract_facts job: turns or a note → atomic facts → embedded, stored, checked.

Runs inside the job's tenant transaction. An LLM failure raises, so the job is
retried with backoff while the memory it came from stays stored and searchable.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from app.db.runtime import Connection
from app.prompts import extract_facts as extract_prompt
from app.services import contradictions
from app.services.facts.model import ExtractedFact, TurnInput
from app.services.facts.offline import extract_offline
from app.services.graph import linking
from app.services.queue import Job
from app.services.runtime import Elephant
from app.services.text import content_hash
from app.services.usage import record_usage


def run_extraction(elephant: Elephant, conn: Connection, job: Job) -> int:
    """Returns the number of new facts stored."""
    payload = job.payload
    if "memory_id" in payload:
        source = _note_source(conn, str(payload["memory_id"]))
    else:
        source = _conversation_source(conn, payload)
    if source is None:
        return 0  # the memory or conversation was deleted meanwhile
    turns, anchor, memory_for_turn, conversation_id, source_name = source
    facts = _extract(elephant, conn, job.tenant_id, turns, anchor)
    if not facts:
        return 0
    vectors = elephant.embedder.embed_documents([fact.text for fact in facts])
    rows = []
    for fact, vector in zip(facts, vectors, strict=True):
        memory_id = next(
            (memory_for_turn[t] for t in fact.source_turn_ids if t in memory_for_turn),
            memory_for_turn.get("*"),
        )
        rows.append(
            (
                job.tenant_id,
                memory_id,
                conversation_id,
                fact.source_turn_ids,
                fact.subject,
                fact.text,
                vector,
                fact.fact_type,
                fact.confidence,
                json.dumps([entity.model_dump() for entity in fact.entities]),
                fact.valid_from,
                _valid_to(fact),
                content_hash(fact.text),
                source_name,
            )
        )
    stored: list[contradictions.StoredFact] = []
    new_facts: list[tuple[str, ExtractedFact]] = []
    with conn.cursor() as cursor:
        # One pipelined batch; a statement the tenant already knows inserts nothing.
        cursor.executemany(
            "INSERT INTO facts (tenant_id, memory_id, conversation_id, source_turn_ids, subject, "
            "text, embedding, fact_type, confidence, entities, valid_from, valid_to, "
            "content_hash, source) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (tenant_id, content_hash) DO NOTHING RETURNING id",
            rows,
            returning=True,
        )
        for fact, vector in zip(facts, vectors, strict=True):
            row = cursor.fetchone()
            if row is not None:
                new_facts.append((str(row[0]), fact))
                stored.append(
                    contradictions.StoredFact(
                        str(row[0]), fact.text, fact.subject, fact.valid_from, vector
                    )
                )
            cursor.nextset()
    contradictions.check(elephant, conn, job.tenant_id, stored)
    linking.link_facts(elephant, conn, job.tenant_id, new_facts)
    return len(stored)


def _valid_to(fact: ExtractedFact) -> datetime | None:
    if (
        fact.valid_to is not None
        and fact.valid_from is not None
        and fact.valid_to < fact.valid_from
    ):
        return None
    return fact.valid_to


def _extract(
    elephant: Elephant,
    conn: Connection,
    tenant: str,
    turns: list[TurnInput],
    anchor: datetime | None,
) -> list[ExtractedFact]:
    llm = elephant.llm
    if llm is None:
        return extract_offline(turns, anchor)
    result = llm.complete_json(  # LLMError propagates: the worker retries the job
        system=extract_prompt.SYSTEM,
        prompt=extract_prompt.build_prompt(turns, anchor),
        schema=extract_prompt.FactsResponse,
        max_tokens=4096,
    )
    record_usage(conn, tenant, "extract_facts", result.usage, ok=True)
    return [extract_prompt.to_extracted(fact) for fact in result.value.facts]


# turns, date anchor, memory id per turn id ("*" for a note), conversation id, source
_Source = tuple[list[TurnInput], datetime | None, dict[str, str], str | None, str]


def _note_source(conn: Connection, memory_id: str) -> _Source | None:
    row = conn.execute(
        "SELECT text, coalesce(event_at, created_at), source FROM memories WHERE id = %s",
        (memory_id,),
    ).fetchone()
    if row is None:
        return None
    text, when, source = row
    return [TurnInput(None, text, when, None)], when, {"*": memory_id}, None, source


def _conversation_source(conn: Connection, payload: dict[str, Any]) -> _Source | None:
    conversation_id = str(payload["conversation_id"])
    conversation = conn.execute(
        "SELECT source FROM conversations WHERE id = %s", (conversation_id,)
    ).fetchone()
    if conversation is None:
        return None
    rows = conn.execute(
        "SELECT seq, speaker, text, occurred_at, source_turn_id FROM turns "
        "WHERE conversation_id = %s AND seq BETWEEN %s AND %s ORDER BY seq",
        (conversation_id, payload["seq_from"], payload["seq_to"]),
    ).fetchall()
    if not rows:
        return None
    windows = conn.execute(
        "SELECT id, turn_start, turn_end FROM memories WHERE conversation_id = %s "
        "AND turn_end >= %s AND turn_start <= %s ORDER BY turn_start",
        (conversation_id, payload["seq_from"], payload["seq_to"]),
    ).fetchall()
    turns = []
    memory_for_turn: dict[str, str] = {}
    for seq, speaker, text, occurred_at, source_turn_id in rows:
        turn_id = source_turn_id or f"#{seq}"
        turns.append(TurnInput(speaker, text, occurred_at, turn_id))
        window = next((w for w in windows if w[1] <= seq <= w[2]), None)
        if window is not None:
            memory_for_turn[turn_id] = str(window[0])
    anchor_text = payload.get("session_date")
    anchor = datetime.fromisoformat(anchor_text) if anchor_text else None
    return turns, anchor, memory_for_turn, conversation_id, str(conversation[0])
