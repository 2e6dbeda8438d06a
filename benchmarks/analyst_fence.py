"""What the analyst fence (migration 0017) costs and what the EXPLAIN prefix walk gets.

    .venv/bin/python benchmarks/analyst_fence.py [--small 2000] [--big 200000] [--runs 20]
        [--smoke] [--out benchmarks/results/analyst_fence.json]

A fresh embedded database in a temporary data dir with two tenants: `small` (the
analyst's) and `big` beside it, each with memories spread over 30 days and one fact
per memory (subjects `subj<n>`). As an analyst of `small`:

- the prefix walk of issue 40 over `big`'s fact subjects with EXPLAIN ANALYZE and index
  scans forced (`enable_seqscan`, `enable_bitmapscan` off): EXPLAINs run, characters
  recovered (0 expected);
- the latency of three queries through the fence (the analyst's views) against the same
  questions asked directly of the tables, as the migrator, with `tenant_id = 'small'`
  (what an index on the tenant gives): the docs' dashboard query, a count of memories, a
  fact looked up by subject. The fence reads the tenant's rows whole (OFFSET 0 keeps the
  caller's conditions out of its scan), so the gap grows with the analyst's tenant, not
  with `big`.

`--smoke` uses 200 and 2,000 rows and 3 runs (seconds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import string
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from app.config import Settings
from app.db import Database
from app.services.access import analysts
from app.services.access.analysts import AnalystIn

ROOT = Path(__file__).resolve().parents[1]
ALPHABET = string.ascii_lowercase[:-1]
SEED = (
    "INSERT INTO tenants (id) VALUES (%(tenant)s)",
    "INSERT INTO memories (tenant_id, kind, text, content_hash, created_at) "
    "SELECT %(tenant)s, 'note', 'note ' || i, md5(%(tenant)s || i), "
    "now() - (i %% 30) * interval '1 day' FROM generate_series(1, %(rows)s) AS i",
    "INSERT INTO facts (tenant_id, subject, text, recorded_at) "
    "SELECT %(tenant)s, 'subj' || i, 'fact ' || i, now() - (i %% 30) * interval '1 day' "
    "FROM generate_series(1, %(rows)s) AS i",
)


def dashboard_query() -> str:
    """The dashboard query of docs/security.md, as the docs print it."""
    page = (ROOT / "docs" / "security.md").read_text()
    block = page.split("A dashboard query", 1)[1].split("```sql", 1)[1].split("```", 1)[0]
    return block.strip().rstrip(";")


def questions() -> list[tuple[str, str, str]]:
    """(label, through the fence, directly with the tenant named)."""
    fenced = dashboard_query()
    where = "FROM memories\n     WHERE "
    assert where in fenced, "the docs' dashboard query changed: update this benchmark"
    direct = fenced.replace(where, where + "tenant_id = 'small' AND ", 1)
    return [
        ("dashboard", fenced, direct),
        (
            "count_memories",
            "SELECT count(*) FROM memories",
            "SELECT count(*) FROM memories WHERE tenant_id = 'small'",
        ),
        (
            "fact_by_subject",
            "SELECT text FROM facts WHERE subject = 'subj7'",
            "SELECT text FROM facts WHERE tenant_id = 'small' AND subject = 'subj7'",
        ),
    ]


def timed(conn: psycopg.Connection, query: str, runs: int) -> dict[str, float]:
    conn.execute(query).fetchall()  # warm
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        conn.execute(query).fetchall()
        samples.append(time.perf_counter() - started)
    return {"p50_ms": round(statistics.median(samples) * 1000, 3)}


def prefix_walk(conn: psycopg.Connection) -> dict[str, Any]:
    """Issue 40's walk over big's subjects; a probe 'shows a row' when its masked plan
    differs from the plan of a range that holds nothing."""
    conn.execute("SET enable_seqscan = off")
    conn.execute("SET enable_bitmapscan = off")
    explain = "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) "
    template = "SELECT 1 FROM facts WHERE tenant_id = 'big' AND subject >= {} AND subject < {}"
    probes = 0

    def plan(lo: str, hi: str) -> str:
        nonlocal probes
        probes += 1
        query = sql.SQL(explain + template).format(sql.Literal(lo), sql.Literal(hi))
        text = "\n".join(str(r[0]) for r in conn.execute(query))
        return text.replace(repr(lo), "'LO'").replace(repr(hi), "'HI'")

    baseline = plan("0000", "0001")
    started = time.perf_counter()
    prefix = ""
    while len(prefix) < 10:
        step = next(
            (c for c in ALPHABET if plan(prefix + c, prefix + chr(ord(c) + 1)) != baseline), None
        )
        if step is None:
            break
        prefix += step
    seconds = time.perf_counter() - started
    conn.execute("RESET ALL")
    return {"explains": probes, "seconds": round(seconds, 3), "recovered": prefix}


def run(small: int, big: int, runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="elephant-fence-") as tmp:
        settings = Settings.model_validate({"data_dir": tmp, "worker": {"enabled": False}})
        db = Database(settings)
        db.open()
        try:
            with db.admin_connection() as conn:
                for tenant, rows in (("small", small), ("big", big)):
                    for statement in SEED:
                        conn.execute(statement, {"tenant": tenant, "rows": rows})
                conn.commit()
                conn.execute("ANALYZE")
            analyst = analysts.create(db, AnalystIn(name="bench", tenants=["small"]))
            results: dict[str, Any] = {"small": small, "big": big, "runs": runs}
            with psycopg.connect(analysts.login_conninfo(db, analyst.role)) as fenced:
                fenced.autocommit = True
                results["prefix_walk"] = prefix_walk(fenced)
                with db.admin_connection() as direct:
                    for label, through, named in questions():
                        results[label] = {
                            "fenced": timed(fenced, through, runs),
                            "direct": timed(direct, named, runs),
                        }
            analysts.revoke(db, "bench")
            return results
        finally:
            db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", type=int, default=2000)
    parser.add_argument("--big", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--smoke", action="store_true", help="200 / 2,000 rows, 3 runs")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/analyst_fence.json"))
    args = parser.parse_args()
    small, big, runs = (200, 2000, 3) if args.smoke else (args.small, args.big, args.runs)
    results = run(small, big, runs)
    walk = results["prefix_walk"]
    print(f"tenants: small {small:,} rows (the analyst's), big {big:,} rows")
    print(
        f"prefix walk over big's subjects: {walk['explains']} EXPLAINs in "
        f"{walk['seconds']} s, recovered {walk['recovered']!r} ({len(walk['recovered'])} chars)"
    )
    for label, _, _ in questions():
        got = results[label]
        print(
            f"{label:16} fenced p50 {got['fenced']['p50_ms']:8.2f} ms   "
            f"direct p50 {got['direct']['p50_ms']:8.2f} ms"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"smoke": args.smoke, **results}, indent=2))


if __name__ == "__main__":
    main()
