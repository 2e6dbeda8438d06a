"""Memory, queried in SQL as an analyst would: notebook-style cells (``# %%``).

    .venv/bin/python examples/analyst.py

Run it as a script, or cell by cell in VS Code / Jupyter (the ``# %%`` markers). It seeds
a little memory through the Python client (notes from three sources, two customer
conversations in which facts change, a few searches and feedback), creates a read-only
SQL analyst login through the API (``POST /analysts``, the same as ``elephant analysts
create``), connects with psycopg as that analyst and queries the tables and views:
memories per source, the admission gate's decisions, facts superseded over time, facts
as of a date, search usage, the entities facts are about. Every statement is
parameterised; every row it reads belongs to the analyst's tenant (row-level security
keyed on the login, not on anything the session sets).

No model is involved: this runs offline. The server: ELEPHANT_URL (with an
ELEPHANT_API_KEY holding the admin scope) if set, else a throwaway ``elephant serve``
(examples/_server.py). The analyst connects where the server says its database is (the
``connection`` returned with the password); if this machine reaches that database under
another address, set ANALYST_DATABASE_URL (user and password still come from the analyst).
"""

# %% Setup: a server, a client, a little memory
from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import sys
import time
from typing import Any

import psycopg
from _server import elephant_server
from psycopg.conninfo import make_conninfo

from elephant_client import Elephant

resources = contextlib.ExitStack()
atexit.register(resources.close)  # a script stopped half-way still stops its server
server = resources.enter_context(elephant_server())
memory = resources.enter_context(Elephant(server.url, api_key=server.api_key))
tenant = memory.stats().tenant

NOTES = [  # (source, when, text): the last two are chit-chat for the gate to turn away
    ("crm", "2025-01-15", "Northwind renewed its Enterprise contract for 3 years at 180k EUR."),
    ("crm", "2025-02-03", "Contoso asked for SSO with Okta before the April rollout."),
    ("slack", "2025-02-10", "Priya owns the Adyen integration; Tom reviews the billing code."),
    ("slack", "2025-03-02", "The Q3 billing migration moves invoices from Stripe to Adyen."),
    ("email", "2025-03-20", "Fabrikam's CFO Lena Ortiz wants quarterly invoices, not monthly."),
    ("slack", "2025-03-21", "ok thanks"),
    ("email", "2025-03-22", "sounds good!"),
]
CONVERSATIONS = [  # (speaker, [(session date, what they said), ...]): each fact changes once
    (
        "Ana Costa",
        [
            ("2025-01-10", "I live at 3 Elm Road in Leeds. I'm on the Pro plan."),
            ("2025-05-20", "I moved to 40 Canal Street in Manchester last week."),
        ],
    ),
    (
        "Omar Haddad",
        [
            ("2025-02-01", "I work at Acme Logistics as a dispatcher."),
            ("2025-04-14", "I joined Globex last month."),
        ],
    ),
]
SEARCHES = [
    "Who owns the Adyen integration?",
    "Where does Ana Costa live?",
    "Where does Ana Costa live now?",
    "Which customers asked for changes to invoicing?",
]

for source, when, text in NOTES:
    stored = memory.commit(text, source=source, occurred_at=f"{when}T12:00:00Z", wait=True)
    print(f"commit [{source}] {stored.status:<9} {text}")
memory.commit(NOTES[0][2], source="crm")  # a repeat: answered as a duplicate
for speaker, sessions in CONVERSATIONS:
    for when, text in sessions:
        turns = [{"speaker": speaker, "text": text}, {"speaker": "assistant", "text": "Noted."}]
        memory.commit_conversation(
            turns, session_date=f"{when}T10:00:00Z", source="support", wait=True
        )
        print(f"conversation [support] {when} {speaker}: {text}")
uses = 0  # items the searches returned, and the feedback given: what access_stats will count
for query in SEARCHES:
    hits = memory.search(query, limit=3).results
    uses += len(hits) + bool(hits)
    print(f"search {query!r}: {len(hits)} hits")
    if hits and hits[0].kind == "fact":  # the reader found the top hit useful
        memory.feedback(helpful=True, fact_id=hits[0].id)
    elif hits:
        memory.feedback(helpful=True, memory_id=hits[0].id)

# %% An analyst login for this tenant, and a helper that prints a result as a table
analyst_name = f"example_{secrets.token_hex(3)}"
analyst = memory.create_analyst(analyst_name, tenants=[tenant], statement_timeout_seconds=30)
resources.callback(memory.revoke_analyst, analyst_name)  # revoked when the run ends
conninfo = make_conninfo(
    os.environ.get("ANALYST_DATABASE_URL") or analyst.connection,
    user=analyst.role,
    password=analyst.password,
)
db = resources.enter_context(psycopg.connect(conninfo, autocommit=True))
print(f"analyst {analyst.role} reads tenant(s) {analyst.tenants}: {analyst.connection}")


def show(title: str, query: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    """Run a parameterised query as the analyst and print its rows as a small table."""
    cursor = db.execute(query, params)
    columns = [column.name for column in cursor.description or ()]
    rows = cursor.fetchall()
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    print(f"\n## {title}")
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))
    print(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return rows


def _cell(value: Any, width: int = 58) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def expect(ok: bool, what: str) -> None:
    """The script's checks: exit 1 when memory does not hold what the seed implies."""
    if not ok:
        sys.exit(f"FAIL: {what}")


# %% Memories per source and kind
rows = show(
    "Memories per source",
    """SELECT source, kind, count(*) AS memories,
              round(avg(importance)::numeric, 1) AS avg_importance,
              min(coalesce(event_at, created_at))::date AS first_event,
              max(coalesce(event_at, created_at))::date AS last_event
         FROM memories
        GROUP BY source, kind
        ORDER BY memories DESC, source""",
)
expect({row[0] for row in rows} >= {"crm", "slack", "email", "support"}, "memories per source")

# %% The admission gate: what it accepted, what it turned away, and why
show(
    "Gate decisions per source",
    """SELECT source, decision, count(*) AS writes,
              round(avg(composite)::numeric, 2) AS avg_score, min(threshold) AS threshold
         FROM admission_log
        GROUP BY source, decision
        ORDER BY source, decision""",
)
rows = show(
    "Turned away",
    """SELECT created_at::date AS day, source, text_preview, composite, reason
         FROM admission_log
        WHERE decision IN ('rejected', 'duplicate')
        ORDER BY created_at""",
)
expect({row[1] for row in rows} >= {"slack", "email"}, "the chit-chat was rejected")

# %% Facts superseded over time: contradictions close the older fact, nothing is deleted
show(
    "Facts superseded per month (by when they stopped being true)",
    """SELECT to_char(date_trunc('month', valid_to), 'YYYY-MM') AS month,
              count(*) AS superseded
         FROM facts
        WHERE status = 'superseded'
        GROUP BY 1
        ORDER BY 1""",
)
rows = show(
    "What changed, and what it replaced",
    """SELECT old.subject, old.valid_to::date AS changed_on, old.text AS was,
              new.text AS now, c.detector
         FROM contradictions AS c
         JOIN facts AS old ON old.id = c.older_fact_id
         JOIN facts AS new ON new.id = c.newer_fact_id
        ORDER BY old.valid_to""",
)
expect({row[0] for row in rows} >= {"Ana Costa", "Omar Haddad"}, "both changes were contradictions")

# %% Bi-temporal: what was true on a date, next to what is true now (the current_facts view)
people = ["Ana Costa", "Omar Haddad"]
then = show(
    "Facts true on 2025-02-15",
    """SELECT subject, text, valid_from::date AS since, valid_to::date AS until, status
         FROM facts
        WHERE subject = ANY(%(people)s)
          AND status <> 'retracted'
          AND (valid_from IS NULL OR valid_from <= %(at)s)
          AND (valid_to IS NULL OR valid_to > %(at)s)
        ORDER BY subject, text""",
    {"people": people, "at": "2025-02-15"},
)
now = show(
    "Facts true now (current_facts)",
    """SELECT subject, text, valid_from::date AS since
         FROM current_facts
        WHERE subject = ANY(%(people)s)
        ORDER BY subject, text""",
    {"people": people},
)
expect(any("Elm Road" in row[1] for row in then), "Leeds was the address on 2025-02-15")
expect(not any("Elm Road" in row[1] for row in now), "Leeds is no longer current")
expect(any("Canal Street" in row[1] for row in now), "Manchester is the current address")

# %% Search usage: what searches returned (written in batches, a few seconds late)
usage_query = """
    SELECT a.item_kind AS kind, coalesce(m.text, f.text) AS item,
           a.access_count AS returned, a.last_accessed_at::timestamp(0) AS last_returned,
           (SELECT count(*) FROM feedback AS fb
             WHERE fb.memory_id = a.item_id OR fb.fact_id = a.item_id) AS marked_helpful
      FROM access_stats AS a
      LEFT JOIN memories AS m ON a.item_kind = 'memory' AND m.id = a.item_id
      LEFT JOIN facts AS f ON a.item_kind = 'fact' AND f.id = a.item_id
     ORDER BY a.access_count DESC, a.last_accessed_at DESC
     LIMIT %(top)s"""
# Searches hand what they returned to a recorder that writes it every
# lifecycle.access_flush_seconds (5 s by default): wait for the batch.
deadline = time.monotonic() + 20
while db.execute("SELECT coalesce(sum(access_count), 0) FROM access_stats").fetchone() < (uses,):
    expect(time.monotonic() < deadline, "search usage reached access_stats")
    time.sleep(0.5)
show("Most returned by search", usage_query, {"top": 8})

# %% Entities facts are about or mention (fact_entities, graph_entities)
show(
    "Entities by facts",
    """SELECT e.name, e.role, count(*) FILTER (WHERE fe.link = 'about') AS about,
              count(*) FILTER (WHERE fe.link = 'mentions') AS mentions
         FROM fact_entities AS fe
         JOIN graph_entities AS e ON e.tenant_id = fe.tenant_id AND e.key = fe.entity_key
        GROUP BY e.name, e.role
        ORDER BY count(*) DESC, e.name
        LIMIT %(top)s""",
    {"top": 8},
)

# %% What an analyst cannot do: see other tenants, or write
rows = show("Tenants this login sees", "SELECT DISTINCT tenant_id FROM memories")
expect([row[0] for row in rows] == [tenant], "the analyst sees its own tenant only")
try:
    db.execute("UPDATE memories SET importance = 100 WHERE source = %(source)s", {"source": "crm"})
    expect(False, "the analyst cannot write")
except psycopg.Error as exc:
    print(f"\nUPDATE as the analyst: refused ({type(exc).__name__}: {str(exc).strip()})")


# %% Done: the analyst is revoked, a throwaway server stopped
print("\nall checks passed")
resources.close()
