"""Does the BM25 keyword lane find every row after restarts and kills?

    .venv/bin/python benchmarks/keyword_restarts.py [--rows 20000] [--sample 1000]
        [--smoke] [--out benchmarks/results/keyword_restarts.json]

An embedded database (temporary data dir) gets --rows notes in one tenant, each holding
a word no other row holds, written after the schema was created (so the bm25 index was
built empty, as on every new database). Then five cycles: a stop of the given kind, a
start (Database.open, as every elephant process starts), and a check: --sample random
rows plus the 100 newest, each looked up by the BM25 lane's ordered scan for its own
word, as the app role under row-level security; then 10% more rows are written. Stops:
clean, clean, kill -9 of the postmaster, kill -9 of the app (a process holding the
server dies after writing), clean. Reported per cycle: rows found, the rebuild time
(keyword_index_repairs), the time to open.

Run twice: as shipped (the bm25 indexes rebuilt once per server start), and with
search.bm25_rebuild_on_restart = false (only the probe guards: it catches lost
statistics, not rows a crash dropped outside its sample). Target: 100% found after
every cycle, as shipped.

`--smoke`: 300 rows, a 100-row sample, as shipped only (seconds;
tests/benchmarks/test_benchmark_smoke.py runs it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ is not installed

from app.config import Settings
from app.db import Database
from app.db.embedded import EmbeddedPostgres

TENANT = "restarts"
CYCLES = ("clean", "clean", "kill -9 postmaster", "kill -9 app", "clean")
NEWEST = 100


def word(n: int) -> str:
    return f"qz{n}kw"


WRITE = """
INSERT INTO memories (tenant_id, kind, text, content_hash)
SELECT %(tenant)s, 'note',
       'Note ' || n || ': ' || 'qz' || n || 'kw' || ' about the harbour, the ferry and the tide.',
       'restart-' || n
FROM generate_series(%(first)s::int, %(last)s::int) AS n
"""


def write(db: Database, first: int, count: int) -> None:
    with db.tenant(TENANT) as conn:
        conn.execute(WRITE, {"tenant": TENANT, "first": first, "last": first + count - 1})


def found(db: Database, rows: list[int]) -> int:
    hits = 0
    with db.tenant(TENANT) as conn:
        for n in rows:
            row = conn.execute(
                "SELECT text, text <@> to_bm25query(%s, 'memories_text_bm25') AS score "
                "FROM memories ORDER BY score LIMIT 1",
                (word(n),),
            ).fetchone()
            hits += bool(row and word(n) in row[0] and float(row[1]) != 0)
    return hits


def open_db(root: Path, rebuild: bool) -> tuple[Database, float]:
    settings = Settings.model_validate(
        {
            "data_dir": str(root),
            "log": {"level": "WARNING"},
            "search": {"bm25_rebuild_on_restart": rebuild},
        }
    )
    started = time.perf_counter()
    db = Database(settings)
    db.open()
    return db, time.perf_counter() - started


def kill_postmaster(db: Database) -> None:
    assert db.embedded is not None
    status = db.embedded.status()
    assert status is not None
    family = [psutil.Process(status.pid), *psutil.Process(status.pid).children(True)]
    os.kill(status.pid, signal.SIGKILL)
    psutil.wait_procs(family, timeout=30)


APP = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, sys.argv[2])
    from benchmarks.keyword_restarts import open_db, write
    from pathlib import Path
    db, _ = open_db(Path(sys.argv[1]), sys.argv[5] == "1")
    write(db, int(sys.argv[3]), int(sys.argv[4]))
    print("written", flush=True)
    time.sleep(600)
    """
)


def app_writes_then_dies(root: Path, first: int, count: int, rebuild: bool) -> None:
    repo = Path(__file__).resolve().parents[1]
    args = [str(root), str(repo), str(first), str(count), "1" if rebuild else "0"]
    app = subprocess.Popen([sys.executable, "-c", APP, *args], stdout=subprocess.PIPE, text=True)
    try:
        assert app.stdout is not None and app.stdout.readline().strip() == "written"
    finally:
        app.kill()
        app.wait(timeout=10)


def rebuild_seconds(db: Database) -> dict[str, float]:
    with db.admin_connection() as conn:
        rows = conn.execute(
            "SELECT index_name, seconds FROM keyword_index_repairs ORDER BY 1"
        ).fetchall()
    return {str(name): round(float(seconds), 3) for name, seconds in rows}


def run(rows: int, sample: int, rebuild: bool, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    cycles = []
    with tempfile.TemporaryDirectory(prefix="elephant-restarts-") as tmp:
        root = Path(tmp)
        db, _ = open_db(root, rebuild)
        total = 0
        write(db, total, rows)
        total += rows
        try:
            for cycle in CYCLES:
                more = max(rows // 10, 1)
                if cycle == "kill -9 postmaster":
                    kill_postmaster(db)
                    db.close()
                elif cycle == "kill -9 app":
                    db.close()
                    app_writes_then_dies(root, total, more, rebuild)
                    total += more
                else:
                    db.close()
                db, open_s = open_db(root, rebuild)
                checked = sorted(
                    set(rng.sample(range(total), min(sample, total)))
                    | set(range(max(total - NEWEST, 0), total))
                )
                hits = found(db, checked)
                cycles.append(
                    {
                        "stop": cycle,
                        "rows": total,
                        "checked": len(checked),
                        "found": hits,
                        "found_share": round(hits / len(checked), 4),
                        "open_s": round(open_s, 2),
                        "trusted": db.keyword.trusted,
                        "rebuilt": db.keyword.state.rebuilt,
                        "rebuild_s": rebuild_seconds(db),
                    }
                )
                print(
                    f"  {'rebuild' if rebuild else 'probe only'}: after {cycle}: "
                    f"{hits}/{len(checked)} found, open {open_s:.2f}s, rebuilt "
                    f"{db.keyword.state.rebuilt or 'none'}",
                    flush=True,
                )
                write(db, total, more)
                total += more
        finally:
            db.close()
            EmbeddedPostgres(root / "embedded").stop()
    return {"rebuild_on_restart": rebuild, "cycles": cycles}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--sample", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument(
        "--out", type=Path, default=Path("benchmarks/results/keyword_restarts.json")
    )
    args = parser.parse_args()
    if args.smoke:
        args.rows, args.sample = 300, 100
    modes = (True,) if args.smoke else (True, False)  # smoke: as shipped only (CI time)
    runs = [run(args.rows, args.sample, rebuild, args.seed) for rebuild in modes]
    shipped = runs[0]["cycles"]
    met = all(c["found"] == c["checked"] for c in shipped)
    print("\n| stop | rows | found (as shipped) | found (probe only) | open s | rebuild s |")
    print("| --- | --- | --- | --- | --- | --- |")
    probe_only = runs[1]["cycles"] if len(runs) > 1 else [None] * len(shipped)
    for a, b in zip(shipped, probe_only, strict=True):
        other = "-" if b is None else f"{b['found']}/{b['checked']}"
        print(
            f"| {a['stop']} | {a['rows']} | {a['found']}/{a['checked']} | "
            f"{other} | {a['open_s']} | {a['rebuild_s']} |"
        )
    print(f"\ntarget: 100% found after every cycle as shipped: {'met' if met else 'NOT met'}")
    body = {
        "benchmark": "keyword_restarts",
        "smoke": args.smoke,
        "rows": args.rows,
        "sample": args.sample,
        "newest_checked": NEWEST,
        "met": met,
        "runs": runs,
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(body, indent=2, default=str))
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
