"""Retention: erase what a source keeps longer than lifecycle.retention allows.

``lifecycle.retention`` maps a source to days (``{"chat": 30}``). A row of that source
is expired when it was last stored or added to before the cut-off (now - days):

- a conversation: when its newest turn (or the conversation itself) is older; it
  goes whole, with its turns, windows, facts and jobs;
- a memory outside a conversation (a note): when it was last stored (created or
  stored again) before the cut-off;
- a fact of the source that hangs off no kept memory or conversation.

Everything goes through the erasure path (app/services/access/erasure/), so the facts
derived from what goes, their graph links, vectors and passages go too, and every
erasure is audited like one asked for by hand. Sources not named are never touched.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from uuid import UUID

from app.db.resources import load_sql
from app.db.runtime import Connection
from app.services.access import audit
from app.services.access.erasure import MAX_IDS, EraseIn, erase
from app.services.lifecycle.report import Report
from app.services.runtime import Elephant

_CONVERSATIONS = load_sql("lifecycle/retention_conversations.sql")
_MEMORIES = load_sql("lifecycle/retention_memories.sql")
_FACTS = load_sql("lifecycle/retention_facts.sql")


def _chunks(ids: list[UUID], size: int = MAX_IDS) -> list[list[UUID]]:
    return [ids[i : i + size] for i in range(0, len(ids), size)]


def run(elephant: Elephant, conn: Connection, tenant: str, *, dry_run: bool) -> Report:
    """Find what expired in ``conn`` (the job's transaction); erase it through the
    erasure path, each request in its own transaction (a retry resumes where it stopped)."""
    rules = elephant.settings.lifecycle.retention
    report = Report("retention", tenant, dry_run, counts={"conversations": 0, "memories": 0})
    report.counts["facts"] = 0
    now = conn.execute("SELECT now()").fetchone()
    at: datetime = now[0] if now else datetime.now().astimezone()
    sources: dict[str, dict[str, object]] = {}
    removed: dict[str, int] = {}
    for source, days in sorted(rules.items()):
        cutoff = at - timedelta(days=days)
        params = {"tenant": tenant, "source": source, "cutoff": cutoff}
        conversations = [row[0] for row in conn.execute(_CONVERSATIONS, params).fetchall()]
        memories = [row[0] for row in conn.execute(_MEMORIES, params).fetchall()]
        facts = [row[0] for row in conn.execute(_FACTS, params).fetchall()]
        sources[source] = {
            "days": days,
            "cutoff": cutoff.isoformat(),
            "conversations": len(conversations),
            "memories": len(memories),
            "facts": len(facts),
        }
        report.counts["conversations"] += len(conversations)
        report.counts["memories"] += len(memories)
        report.counts["facts"] += len(facts)
        if dry_run:
            continue
        requests = [EraseIn(conversation_id=str(ident)) for ident in conversations]
        requests += [EraseIn(memory_ids=chunk) for chunk in _chunks(memories)]
        requests += [EraseIn(fact_ids=chunk) for chunk in _chunks(facts)]
        for request in requests:
            erased = erase(elephant, tenant, request, actor=None)
            for table, rows in erased.removed.items():
                removed[table] = removed.get(table, 0) + rows
    report.detail = {"sources": sources}
    if not dry_run:
        report.detail["removed"] = removed
        if report.total:
            audit.write(
                conn,
                tenant=tenant,
                key_prefix=None,
                action="maintain.retention",
                target=f"{len(sources)} sources",
                detail={"counts": report.counts, "removed": removed},
            )
    return report
