"""Start-up time of the embedded server: cold (initdb + start + migrate), warm, adopt.

    .venv/bin/python benchmarks/startup.py [--runs 5] [--smoke]
        [--out benchmarks/results/startup.json]

Each run uses a fresh temporary data dir. "cold" is the first Database.open() on
an empty data dir (initdb, start, CREATE DATABASE, migrations, pool); "warm" is
Database.open() after a clean stop (start + checks + pool); "adopt" is
Database.open() while another handle keeps the server running; "server_*" time
EmbeddedPostgres.start() alone. `--smoke` is one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from app.config import Settings
from app.db import Database
from app.db.embedded import EmbeddedPostgres


def timed_open(settings: Settings) -> tuple[float, Database]:
    started = time.perf_counter()
    db = Database(settings)
    db.open()
    return time.perf_counter() - started, db


def one_run() -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="elephant-bench-") as tmp:
        settings = Settings.model_validate({"data_dir": tmp})
        cold, db = timed_open(settings)
        db.close()
        warm, db = timed_open(settings)
        adopt, other = timed_open(settings)
        other.close()
        db.close()
        server = EmbeddedPostgres(Path(tmp) / "embedded")
        started = time.perf_counter()
        server.start()
        server_warm = time.perf_counter() - started
        server.release()
        return {
            "cold_open_s": cold,
            "warm_open_s": warm,
            "adopt_open_s": adopt,
            "server_warm_start_s": server_warm,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="one run")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/startup.json"))
    args = parser.parse_args()
    if args.smoke:
        args.runs = 1
    runs = [one_run() for _ in range(args.runs)]
    summary = {
        key: {
            "median": round(statistics.median(run[key] for run in runs), 3),
            "min": round(min(run[key] for run in runs), 3),
            "max": round(max(run[key] for run in runs), 3),
        }
        for key in runs[0]
    }
    result = {"smoke": args.smoke, "runs": args.runs, "seconds": summary}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"{'measure':<22}{'median s':>10}{'min s':>10}{'max s':>10}")
    for key, stats in summary.items():
        print(f"{key:<22}{stats['median']:>10}{stats['min']:>10}{stats['max']:>10}")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
