"""Search as shipped on an ingested LoCoMo data dir: p50/p95 of the whole search and its SQL.

    .venv/bin/python benchmarks/locomo_latency.py DATA_DIR LABEL
        [--dataset ../shared/datasets/locomo10.json]

Every question of categories 1-4 once, as a client searches by default (explain only adds
the timings), after 50 warm-up searches of other texts; prints one JSON line with the
load average before and after. To compare two commits interleaved (A B A B), check each
out in a worktree (link its sql/ and migrations/ as app/sql and app/migrations, which the
editable install would otherwise take from this checkout) and run this file with
PYTHONPATH set to the worktree, each on its own copy of one ingest.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from app.config import Settings
from app.services.retrieval.schemas import SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ is not installed

from benchmarks.locomo import DEFAULT_DATASET, SCORED, percentile, read_dataset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("label")
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    args = parser.parse_args()
    questions = [
        q for q in read_dataset(args.dataset, None, False).questions if q.category in SCORED
    ]
    settings = Settings.model_validate({"data_dir": str(args.data_dir), "log": {"level": "ERROR"}})
    elephant = Elephant.open(settings, use_llm_from_settings=False)
    try:
        for question in questions[:50]:
            search(elephant, question.tenant, SearchRequest(query=f"{question.question} (warm-up)"))
        load = os.getloadavg()[0]
        total, sql_ms = [], []
        for question in questions:
            asked = SearchRequest(query=question.question, explain=True)
            found = search(elephant, question.tenant, asked)
            assert found.explain is not None
            total.append(found.explain.timings_ms.total)
            sql_ms.append(found.explain.timings_ms.sql)
    finally:
        elephant.close()
    print(
        json.dumps(
            {
                "label": args.label,
                "searches": len(questions),
                "p50": round(percentile(total, 50), 2),
                "p95": round(percentile(total, 95), 2),
                "sql_p50": round(percentile(sql_ms, 50), 2),
                "load_average_1m": [round(load, 2), round(os.getloadavg()[0], 2)],
            }
        )
    )


if __name__ == "__main__":
    main()
