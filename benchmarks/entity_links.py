"""Entity links of an ingested data dir: run the backfill, then count what it linked.

    .venv/bin/python benchmarks/entity_links.py --data-dir /tmp/x-locomo [--out ...]

Opens the data dir (its migrations queue a ``link_entities`` job per tenant holding
memories, migration 0020), runs the queued jobs (or, with --relink, queues one per
tenant first), and reports per tenant: the facts' entity links and the graph's roles
(as extraction made them), memories, links, distinct entities, the types,
how many entities more than N memories name (N = 25, 50, 100, 200: the hub threshold
search.hub_mentions chooses among), the most linked entities, and the backfill's time.
Use a copy of an ingested LoCoMo dir (docs/benchmarks.md), never the original.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from app.config import Settings
from app.services.jobs import queue
from app.services.jobs.runner import drain
from app.services.runtime import Elephant

HUB_THRESHOLDS = (25, 50, 100, 200)


def tenant_stats(elephant: Elephant, tenant: str) -> dict[str, Any]:
    with elephant.db.tenant(tenant) as conn:
        memories = conn.execute("SELECT count(*) FROM memories").fetchone()
        links = conn.execute("SELECT count(*), count(DISTINCT entity_key) FROM memory_entities")
        total, distinct = links.fetchone() or (0, 0)
        types = dict(
            conn.execute(
                "SELECT entity_type, count(DISTINCT entity_key) FROM memory_entities GROUP BY 1"
            ).fetchall()
        )
        per_entity = [
            (str(k), int(n), str(t))
            for k, n, t in conn.execute(
                "SELECT entity_key, count(*), min(entity_type) FROM memory_entities "
                "GROUP BY 1 ORDER BY 2 DESC, 1"
            ).fetchall()
        ]
        facts = conn.execute(
            "SELECT count(*), count(DISTINCT entity_key) FROM fact_entities WHERE link = 'mentions'"
        ).fetchone() or (0, 0)
        roles = dict(
            conn.execute(
                "SELECT role, count(*) FROM graph_entities WHERE tenant_id = %s GROUP BY 1",
                (tenant,),
            ).fetchall()
        )
    return {
        "fact_mentions": int(facts[0]),
        "fact_entities": int(facts[1]),
        "graph_roles": {str(k): int(v) for k, v in roles.items()},
        "memories": int(memories[0]) if memories else 0,
        "links": int(total),
        "entities": int(distinct),
        "types": {str(k): int(v) for k, v in types.items()},
        "hubs": {str(n): sum(1 for _, c, _ in per_entity if c > n) for n in HUB_THRESHOLDS},
        "top": per_entity[:8],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--relink", action="store_true", help="Queue a backfill per tenant.")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/entity_links.json"))
    args = parser.parse_args()
    settings = Settings.model_validate(
        {"data_dir": str(args.data_dir), "log": {"level": "WARNING"}}
    )
    elephant = Elephant.open(settings, use_llm_from_settings=False)
    try:
        with elephant.db.admin_connection() as conn:
            tenants = [str(r[0]) for r in conn.execute("SELECT id FROM tenants ORDER BY id")]
        if args.relink:
            for tenant in tenants:
                with elephant.db.tenant(tenant) as conn:
                    queue.enqueue(conn, tenant, "link_entities", {}, max_attempts=3)
        started = time.perf_counter()
        ran = drain(elephant)
        seconds = round(time.perf_counter() - started, 1)
        result = {
            "data_dir": str(args.data_dir),
            "jobs": ran,
            "backfill_s": seconds,
            "tenants": {tenant: tenant_stats(elephant, tenant) for tenant in tenants},
        }
    finally:
        elephant.close()
    for tenant, stats in result["tenants"].items():
        print(tenant, json.dumps({k: v for k, v in stats.items() if k != "top"}))
        print("   top:", stats["top"])
    print(f"{ran} jobs in {seconds}s")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
