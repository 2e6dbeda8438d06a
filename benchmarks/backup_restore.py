"""Whole-database backup and restore: time, file size, and what the restore checked.

    .venv/bin/python benchmarks/backup_restore.py [--size 20000] [--seed 7] [--smoke]
        [--out benchmarks/results/backup_restore.json]

A fresh embedded database (temporary data dir) gets benchmarks/scale.py's synthetic
corpus: one tenant with ``size`` memories, 2x passages and size/3 facts with 384-d
vectors, bulk loaded with every index (HNSW, GIN, BM25) built. Then ``elephant
backup`` (app.services.ops.backup.make.backup) writes its file, and ``elephant
restore`` (app.services.ops.backup.restore.restore) restores it into a second
embedded server on another temporary data dir. Measured: each one's wall time, the
file's size, the rows restored and whether every table's count matched, and the BM25
probes. ``--smoke`` runs 2,000 memories.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.config import Settings
from app.db.embedded import EmbeddedPostgres
from app.services.ops.backup.make import backup
from app.services.ops.backup.restore import restore
from benchmarks.common import free_port
from benchmarks.scale import bulk_load, fresh_database, make_corpus, make_vocabulary


def run(size: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    corpus = make_corpus(rng, make_vocabulary(rng), size)
    work = Path(tempfile.mkdtemp(prefix="elephant-bench-backup-"))
    target = Settings.model_validate(
        {
            "data_dir": work / "target",
            "embedded": {"port": free_port()},
            "log": {"level": "WARNING"},
        }
    )
    try:
        with fresh_database("elephant-bench-backup-src-") as db:
            load = bulk_load(db, corpus)
            print(f"[{size}] loaded in {load.copy_s:.1f}s plus index builds")
            started = time.perf_counter()
            made = backup(db.settings, work / "elephant.backup")
            backup_s = time.perf_counter() - started
        print(f"[{size}] backup {backup_s:.1f}s, {made.bytes / 1e6:.1f} MB, {made.rows} rows")
        started = time.perf_counter()
        restored = restore(target, work / "elephant.backup")
        restore_s = time.perf_counter() - started
        print(f"[{size}] restore {restore_s:.1f}s, mismatched {restored.mismatched or 'none'}")
    finally:
        EmbeddedPostgres(work / "target" / "embedded", port=target.embedded.port).stop()
        shutil.rmtree(work, ignore_errors=True)
    return {
        "size": size,
        "backup_s": round(backup_s, 2),
        "restore_s": round(restore_s, 2),
        "file_mb": round(made.bytes / 1e6, 1),
        "rows": made.rows,
        "tables": made.tables,
        "restored_rows": restored.rows,
        "mismatched": restored.mismatched,
        "bm25": restored.bm25,
        "bm25_rebuilt": restored.bm25_rebuilt,
        "invalid_indexes": restored.invalid_indexes,
        "tools": made.tools,
        "backup": asdict(made),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--smoke", action="store_true", help="2,000 memories")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/backup_restore.json"))
    args = parser.parse_args()
    size = 2_000 if args.smoke else args.size
    result = run(size, args.seed)
    result["smoke"] = args.smoke
    result["load_average"] = os.getloadavg()
    result["command"] = " ".join(["benchmarks/backup_restore.py", *sys.argv[1:]])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str))
    print(json.dumps({k: v for k, v in result.items() if k != "backup"}, indent=2, default=str))


if __name__ == "__main__":
    main()
