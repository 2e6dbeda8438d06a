"""How often the reader's rules act on LoCoMo, and what they cost (issue 41 item 3).

    .venv/bin/python benchmarks/search_trust.py --data-dir DIR [--every 5]
        [--out benchmarks/results/search_trust.json]

DIR holds the ingested LoCoMo conversations (benchmarks/locomo.py --data-dir). For every
``--every``-th question: the shipped search (limit 10) and how many of its results folded
another result with the same text (``also``), are marked superseded
(``superseded_by``), and whether any two carry the same text; then, over the fused pool
of 180 (what a limit-60 search diversifies), the time of the supersession query
(sql/retrieval/superseded_memories.sql) and of the rules' Python (one place, marks,
superseded memories below their successors). Prints the numbers and writes JSON.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.config import Settings
from app.services.retrieval.one_place import one_place, words
from app.services.retrieval.schemas import SearchHit, SearchRequest
from app.services.retrieval.search import search
from app.services.retrieval.supersession import (
    below_successors,
    marked,
    superseded,
)
from app.services.runtime import Elephant
from benchmarks.locomo import locomo_parser, read_dataset


def spread(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), 3),
        "p95": round(ordered[int(len(ordered) * 0.95)], 3),
    }


def repeats_a_text(hits: list[SearchHit]) -> bool:
    texts = [" ".join(words(hit.text)) for hit in hits]
    return len(texts) != len(set(texts))


def main() -> None:
    parser = locomo_parser(__doc__, Path("benchmarks/results/search_trust.json"))
    parser.add_argument("--every", type=int, default=5, help="Every Nth question.")
    args = parser.parse_args()
    if args.data_dir is None:
        parser.error("--data-dir: a directory holding the ingested LoCoMo conversations")
    data = read_dataset(args.dataset, args.limit, False)
    settings = Settings.model_validate(
        {"data_dir": str(args.data_dir), "log": {"level": "WARNING"}}
    )
    elephant = Elephant.open(settings, use_llm_from_settings=False)
    counts = {"questions": 0, "folded": 0, "superseded": 0, "lists_repeating_a_text": 0}
    query_ms: list[float] = []
    python_ms: list[float] = []
    try:
        for question in data.questions[:: args.every]:
            asked = SearchRequest(query=question.question, limit=10)
            hits = search(elephant, question.tenant, asked, record_access=False).hits
            counts["questions"] += 1
            counts["folded"] += sum(isinstance(hit.also, list) for hit in hits)
            counts["superseded"] += sum(isinstance(hit.superseded_by, list) for hit in hits)
            counts["lists_repeating_a_text"] += repeats_a_text(hits)
            wide = SearchRequest(query=question.question, limit=180, diversify=False)
            pool = search(elephant, question.tenant, wide, record_access=False).hits
            with elephant.db.reading(question.tenant) as conn:
                started = time.perf_counter()
                found = superseded(conn, question.tenant, pool)
                query_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            below_successors(one_place(marked(pool, found)), found)
            python_ms.append((time.perf_counter() - started) * 1000)
    finally:
        elephant.close()
    result: dict[str, Any] = {
        **counts,
        "superseded_query_ms": spread(query_ms),
        "rules_python_ms": spread(python_ms),
    }
    print(json.dumps(result, indent=1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
