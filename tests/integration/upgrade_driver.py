"""Runs under the OLD code of Elephant (0.1.0), never under today's: test_upgrade.py
extracts that commit's tree and starts this file with ``PYTHONPATH=<that tree>``, so
``app`` below is the released package (its migrations, SQL, services and API).

    python upgrade_driver.py write|read|fresh SETTINGS_JSON OUT_JSON

- ``write``: migrate an empty database with the old migrations (0.1.0's head) and commit
  data through the old API's own write path (notes, a conversation, a closed session, a
  graph record and a decision, feedback, a contradiction, a rejected note, an erased
  memory, the tenant's owner and threshold, API keys), run the old worker's jobs, then
  search every query of QUERIES with the old code.
- ``read``: open an existing database with the old code (after a rollback: its own
  ``migrate`` at its head re-applies its views and functions) and search QUERIES again.
- ``fresh``: migrate an empty database with the old code only (the schema 0.1.0 makes).

It writes what it did to OUT_JSON: the keys' secrets, each query's hits (id, memory_id,
kind, text) and the old code's revision. Only the standard library and ``app`` imported
inside functions: this file is also read by today's tests (QUERIES) without the old code.
"""

from __future__ import annotations

import json
import sys
from typing import Any

OPERATOR = "upgrade-operator"
TENANT = "acme"
OTHER = "beta"

NOTES = (
    "Dana's sourdough starter is called Bubbles and lives in the fridge of the Oslo flat.",
    "The quarterly Zephyr hosting invoice of 4,300 euros is due on 15 March 2026.",
    "Marcus always books aisle seats on long-haul flights to Singapore.",
    "Staging database passwords are rotated every 90 days through HashiCorp Vault.",
    "Priya adopted a retired greyhound named Comet from the Leeds rescue centre.",
    "The team retrospective moved to Wednesday afternoons in the Kepler meeting room.",
    "Dana is allergic to hazelnuts and carries an EpiPen on every trip.",
    "Our production Kubernetes cluster runs on Hetzner machines in Falkenstein.",
    "The wedding anniversary dinner is booked at the Noma restaurant on 12 June.",
    "Tomasz learned to play the bandoneon during a year in Buenos Aires.",
    "The office espresso machine is a La Marzocco Linea descaled every Monday.",
    "Dana lives in Bergen.",
)
LATER_NOTES = ("Dana moved to Trondheim.",)  # a contradiction of "Dana lives in Bergen."
ERASED = "The old VPN gateway at 10.8.0.1 was decommissioned in the Frankfurt rack."
REJECTED = "ok"
OTHER_NOTES = ("Beta's secret project codename is Nightjar, shipping in autumn.",)

CONVERSATION = {
    "conversation_id": "conv-1",
    "session_date": "2026-05-08T14:00:00Z",
    "turns": [
        {"speaker": "Caroline", "text": "I started pottery classes at the Clayhouse studio."},
        {"speaker": "Melanie", "text": "That sounds lovely! What are you making?"},
        {"speaker": "Caroline", "text": "Mostly mugs so far, glazed in cobalt blue."},
        {"speaker": "Melanie", "text": "My brother Luis is a lighthouse keeper in Galicia."},
        {"speaker": "Caroline", "text": "Wow, does he live inside the lighthouse?"},
        {"speaker": "Melanie", "text": "Yes, and we went camping near Lake Tahoe last weekend."},
        {"speaker": "Caroline", "text": "I want to learn rock climbing at the Mesa gym."},
    ],
}
TRANSCRIPT = (
    "Alice: We decided to move the job queue to Postgres with SKIP LOCKED.\n"
    "Bob: The next step is benchmarking the lease heartbeat under load.\n"
    "Alice: And we rejected Redis streams because of the extra service."
)
GRAPH = {
    "entities": [
        {"name": "Priya", "entity_type": "person", "observations": ["Volunteers at Leeds"]},
        {"name": "Comet", "entity_type": "thing", "observations": ["A retired greyhound"]},
        {"name": "Leeds", "entity_type": "place", "epistemic": "assertion"},
    ],
    "relations": [
        {"source": "Priya", "relation_type": "knows", "target": "Comet"},
        {"source": "Priya", "relation_type": "lives_in", "target": "Leeds"},
    ],
}
DECISION = {
    "name": "Job queue in Postgres",
    "decided": "Run background jobs from a Postgres table with SKIP LOCKED",
    "because": "One service fewer to operate",
    "rejected": ["Redis streams", "RabbitMQ"],
}

# (tenant, query, a word only the intended target holds): each query has one target,
# which the old code must rank first (checked by the test), and today's code too.
QUERIES: tuple[tuple[str, str, str], ...] = (
    (TENANT, "what is the sourdough starter called", "Bubbles"),
    (TENANT, "Zephyr hosting invoice amount", "Zephyr"),
    (TENANT, "which seats does Marcus book on flights", "aisle"),
    (TENANT, "how often are staging passwords rotated", "Vault"),
    (TENANT, "Priya's greyhound from the rescue centre", "Comet"),
    (TENANT, "where is the team retrospective held", "Kepler"),
    (TENANT, "what is Dana allergic to", "hazelnuts"),
    (TENANT, "where does the Kubernetes cluster run", "Falkenstein"),
    (TENANT, "anniversary dinner restaurant booking", "Noma"),
    (TENANT, "who plays the bandoneon", "bandoneon"),
    (TENANT, "office espresso machine descaling", "Marzocco"),
    (TENANT, "Caroline pottery classes studio", "Clayhouse"),
    (TENANT, "what colour are the mugs glazed", "cobalt"),
    (TENANT, "Melanie's brother lighthouse keeper", "lighthouse"),
    (TENANT, "camping trip near Lake Tahoe", "Tahoe"),
    (TENANT, "rock climbing gym", "climbing"),
    (TENANT, "job queue SKIP LOCKED decision", "SKIP LOCKED"),
    (TENANT, "benchmarking the lease heartbeat", "heartbeat"),
    (TENANT, "Dana moved to Trondheim", "Trondheim"),
    (OTHER, "secret project codename", "Nightjar"),
)
NOT_FOUND = ((TENANT, "Nightjar codename"),)  # another tenant's word: no hit names it


def _settings(raw: dict[str, Any]) -> Any:
    from app.config import Settings

    return Settings.model_validate(raw)


def _ok(response: Any, *codes: int) -> Any:
    if response.status_code not in (codes or (200, 201)):
        raise SystemExit(f"{response.request.url}: {response.status_code} {response.text}")
    return response.json()


def _runtime(raw: dict[str, Any]) -> Any:
    from app.config import EmbeddingSettings
    from app.db import Database
    from app.providers.embedder import LocalEmbedder
    from app.services.runtime import Elephant

    settings = _settings(raw)
    db = Database(settings)
    db.open()  # the old code's own migrate (auto_migrate), to its head
    return Elephant(settings=settings, db=db, embedder=LocalEmbedder(EmbeddingSettings()), llm=None)


def _client(elephant: Any, key: str) -> Any:
    from litestar.testing import TestClient

    from app.api import create_app

    client = TestClient(app=create_app(elephant.settings, elephant), base_url="http://127.0.0.1")
    client.headers["Authorization"] = f"Bearer {key}"
    return client


def _commit(client: Any, tenant: str, text: str, **extra: Any) -> dict[str, Any]:
    body = {"text": text, **extra}
    headers = {"X-Elephant-Tenant": tenant}
    result: dict[str, Any] = _ok(client.post("/commit?wait=true", json=body, headers=headers))
    return result


def _write(client: Any) -> dict[str, Any]:
    """Everything a 0.1.0 user could have written, through the 0.1.0 API."""
    acme = {"X-Elephant-Tenant": TENANT}
    _ok(client.put("/tenant/owner", json={"owner": "Dana"}, headers=acme))
    _ok(client.put("/amac/threshold", json={"threshold": 3.5}, headers=acme))
    stored = [_commit(client, TENANT, text, source="notes") for text in NOTES]
    for text in OTHER_NOTES:
        _commit(client, OTHER, text)
    _ok(client.post("/commit_conversation?wait=true", json=CONVERSATION, headers=acme))
    session = {"project": "elephant", "transcript": TRANSCRIPT}
    _ok(client.post("/sessions/close", json=session, headers=acme))
    _ok(client.post("/graph/record", json=GRAPH, headers=acme))
    _ok(client.post("/graph/decisions", json=DECISION, headers=acme))
    for text in LATER_NOTES:
        _commit(client, TENANT, text, source="notes")
    rejected = _commit(client, TENANT, REJECTED)
    erased = _commit(client, TENANT, ERASED, force=True)
    _ok(client.delete(f"/memories/{erased['memory_id']}", headers=acme))
    first = stored[0]["memory_id"]
    _ok(client.post("/feedback", json={"memory_id": first, "helpful": True}, headers=acme))
    facts = _ok(client.get("/facts", params={"limit": 5}, headers=acme))["items"]
    if facts:
        feedback = {"fact_id": facts[-1]["id"], "helpful": False}
        _ok(client.post("/feedback", json=feedback, headers=acme))
    reader = _ok(
        client.post("/keys", json={"tenant": TENANT, "scopes": ["read"], "name": "reader"}),
    )
    return {
        "reader_key": reader["key"],
        "stored": [item.get("status") for item in stored],
        "rejected": rejected.get("status"),
    }


def _search(client: Any, extra: list[list[str]]) -> dict[str, Any]:
    """Each query's hits (QUERIES, NOT_FOUND and ``extra``: [tenant, query] pairs) through
    the API's POST /search, as a client sees them."""
    found: dict[str, Any] = {}
    asked = [(tenant, query) for tenant, query, _ in QUERIES] + [*NOT_FOUND, *map(tuple, extra)]
    for tenant, query in asked:
        body = {"query": query, "limit": 10, "consistency": "primary"}
        reply = _ok(client.post("/search", json=body, headers={"X-Elephant-Tenant": tenant}))
        found[f"{tenant}|{query}"] = [
            {key: hit.get(key) for key in ("id", "memory_id", "kind", "text")}
            for hit in reply["results"]
        ]
    return found


def main(mode: str, raw_settings: str, out: str) -> None:
    from app.db import migrate as migrations

    raw = json.loads(raw_settings)
    key = raw.pop("operator_key", None)  # the read mode searches with the operator key
    extra = raw.pop("queries", [])  # and asks these queries too
    if mode == "fresh":
        from app.db import Database

        db = Database(_settings(raw))
        db.start_server()
        try:
            db.migrate()
        finally:
            db.close()
        report: dict[str, Any] = {}
    else:
        from app.services.jobs import drain
        from app.services.keys import KeyIn, create_key

        elephant = _runtime(raw)
        try:
            report = {}
            if mode == "write":
                request = KeyIn(all_tenants=True, scopes=["read", "write", "admin"], name=OPERATOR)
                report["operator_key"] = create_key(elephant.db, request).key
                with _client(elephant, report["operator_key"]) as client:
                    report.update(_write(client))
                    report["jobs_run"] = drain(elephant)
                    report["searches"] = _search(client, extra)
            else:
                with _client(elephant, key) as client:
                    report["searches"] = _search(client, extra)
        finally:
            elephant.close()  # the access recorder flushes its batch
    report["head"] = migrations.head_revision()
    with open(out, "w") as handle:
        json.dump(report, handle, indent=1, default=str)


if __name__ == "__main__":
    main(*sys.argv[1:4])
