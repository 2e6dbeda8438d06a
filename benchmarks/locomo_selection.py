"""Which of the fused candidates to show: selection strategies replayed on LoCoMo.

    .venv/bin/python benchmarks/locomo_selection.py --data-dir DIR [--limit N]
        [--out benchmarks/results/locomo_selection.json] [--smoke]

Searches every question of categories 1-4 once (fused, the product's lanes, the plain
RRF order, 180 candidates: what search(limit=60) ranks before turn diversity), then
replays each selection strategy on the same candidates, so the strategies differ only
in what they pick:

- shipped: turn diversity as the product does it (results that only repeat shown turns
  go below the results bringing new turns)
- sessions-m: then a result whose conversation sessions already have m results above
  it goes below the rest (coverage of other sessions)
- mmr-b: greedy maximal marginal relevance: fused score x the share of the result's
  turns not shown yet / (1 + b x results already shown from its session)
- merge-c: overlapping windows of one session joined into one excerpt of at most c
  turns (their shared turns once), which frees places in the first k

Count measures (recall@1/@10, all-evidence@10/@20) beside token-fair ones: the tokens
of the ranked results needed to cover every evidence turn (median) and all-evidence
within 1,000 tokens taken in order. A strategy that wins only the count measures
shows larger results, not better ones. Sessions are read from LoCoMo's turn ids
("D{session}:{turn}"). Reported on each half of the split (tune on one, report on
the other).
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ is not installed

from app.config import Settings
from app.services.retrieval.diversity import new_turns_first
from app.services.retrieval.schemas import SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant
from benchmarks.locomo import (
    SCORED,
    Question,
    approx_tokens,
    ensure_ingested,
    locomo_parser,
    read_dataset,
    split_halves,
    turn_ids,
    two_level_table,
    write_result,
)

POOL = 180  # search(limit=60) ranks 3 x 60 fused candidates before turn diversity
BUDGET = 1000


@dataclass(frozen=True)
class Candidate:
    kind: str
    score: float
    turns: frozenset[str]
    tokens: float

    @property
    def sessions(self) -> frozenset[str]:
        return frozenset(turn.split(":")[0] for turn in self.turns)


Strategy = Callable[[list[Candidate]], list[Candidate]]


def shipped(pool: list[Candidate]) -> list[Candidate]:
    return new_turns_first(pool, lambda c: sorted(c.turns))


def sessions_first(most: int) -> Strategy:
    def pick(pool: list[Candidate]) -> list[Candidate]:
        seen: dict[str, int] = {}
        ahead, behind = [], []
        for candidate in shipped(pool):
            if candidate.sessions and all(seen.get(s, 0) >= most for s in candidate.sessions):
                behind.append(candidate)
                continue
            ahead.append(candidate)
            for session in candidate.sessions:
                seen[session] = seen.get(session, 0) + 1
        return ahead + behind

    return pick


def mmr(session_penalty: float, k: int = 60) -> Strategy:
    def pick(pool: list[Candidate]) -> list[Candidate]:
        left, chosen = list(pool), []
        covered: set[str] = set()
        seen: dict[str, int] = {}

        def value(c: Candidate) -> float:
            fresh = len(c.turns - covered) / len(c.turns) if c.turns else 1.0
            repeats = max((seen.get(s, 0) for s in c.sessions), default=0)
            return c.score * fresh / (1 + session_penalty * repeats)

        while left and len(chosen) < k:
            best = max(left, key=value)
            left.remove(best)
            chosen.append(best)
            covered |= best.turns
            for session in best.sessions:
                seen[session] = seen.get(session, 0) + 1
        return chosen

    return pick


def merged(cap: int) -> Strategy:
    def pick(pool: list[Candidate]) -> list[Candidate]:
        out: list[Candidate] = []
        for candidate in shipped(pool):
            if candidate.kind == "window":
                for index, shown in enumerate(out):
                    union = shown.turns | candidate.turns
                    if (
                        shown.kind == "window"
                        and shown.sessions == candidate.sessions
                        and shown.turns & candidate.turns
                        and len(union) <= cap
                    ):
                        extra = len(candidate.turns - shown.turns) / len(candidate.turns)
                        tokens = shown.tokens + candidate.tokens * extra
                        out[index] = replace(shown, turns=union, tokens=tokens)
                        break
                else:
                    out.append(candidate)
            else:
                out.append(candidate)
        return out

    return pick


STRATEGIES: dict[str, Strategy] = {
    "shipped": shipped,
    "sessions-1": sessions_first(1),
    "sessions-2": sessions_first(2),
    "mmr-0": mmr(0.0),
    "mmr-0.3": mmr(0.3),
    "merge-7": merged(7),
    "merge-9": merged(9),
}


def measure(question: Question, ranked: Sequence[Candidate]) -> dict[str, float | bool]:
    evidence = question.evidence

    def covered(prefix: Sequence[Candidate]) -> set[str]:
        return set().union(*(c.turns for c in prefix)) if prefix else set()

    tokens, cover_tokens, in_budget = 0.0, float("inf"), set()
    seen: set[str] = set()
    for candidate in ranked:
        tokens += candidate.tokens
        seen |= candidate.turns
        if tokens <= BUDGET:
            in_budget = set(seen)
        if evidence <= seen:
            cover_tokens = tokens
            break
    return {
        "recall@1": bool(covered(ranked[:1]) & evidence),
        "recall@10": bool(covered(ranked[:10]) & evidence),
        "all_evidence@10": evidence <= covered(ranked[:10]),
        "all_evidence@20": evidence <= covered(ranked[:20]),
        f"all_evidence_in_{BUDGET}_tokens": evidence <= in_budget,
        "cover_tokens": cover_tokens,
    }


def summarise(rows: list[dict[str, float | bool]]) -> dict[str, Any]:
    out: dict[str, Any] = {"questions": len(rows)}
    if not rows:
        return out
    for key in rows[0]:
        if key == "cover_tokens":
            costs = sorted(float(row[key]) for row in rows)
            middle = costs[len(costs) // 2]
            out["cover_tokens_p50"] = None if middle == float("inf") else round(middle)
        else:
            out[key] = round(sum(bool(row[key]) for row in rows) / len(rows), 4)
    return out


def candidates_of(elephant: Elephant, question: Question) -> list[Candidate]:
    request = SearchRequest(query=question.question, limit=POOL, diversify=False)
    hits = search(elephant, question.tenant, request, record_access=False).hits
    return [
        Candidate(hit.kind, hit.score, turn_ids(hit.source_turn_ids), approx_tokens(hit.text))
        for hit in hits
    ]


def main() -> None:
    parser = locomo_parser(__doc__, Path("benchmarks/results/locomo_selection.json"))
    parser.add_argument("--smoke", action="store_true", help="two sessions of one conversation")
    args = parser.parse_args()
    started = time.perf_counter()
    data = read_dataset(args.dataset, args.limit, args.smoke)
    questions, tenants, items = data.questions, data.tenants, data.items
    questions = [q for q in questions if q.category in SCORED and q.evidence]

    with contextlib.ExitStack() as stack:
        data_dir = args.data_dir or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="elephant-selection-"))
        )
        data_dir.mkdir(parents=True, exist_ok=True)
        settings = Settings.model_validate({"data_dir": str(data_dir), "log": {"level": "WARNING"}})
        elephant = Elephant.open(settings, use_llm_from_settings=False)
        stack.callback(elephant.close)
        ensure_ingested(elephant, items, tenants)
        pools = [candidates_of(elephant, question) for question in questions]

    halves = split_halves(tenants)
    report: dict[str, Any] = {}
    for name, strategy in STRATEGIES.items():
        measured = [measure(q, strategy(pool)) for q, pool in zip(questions, pools, strict=True)]
        report[name] = {
            half: summarise(
                [row for q, row in zip(questions, measured, strict=True) if q.tenant in members]
            )
            for half, members in halves.items()
        }
        report[name]["multi-hop"] = summarise(
            [row for q, row in zip(questions, measured, strict=True) if q.category == 1]
        )
    result = {
        "smoke": args.smoke,
        "questions": len(questions),
        "pool": POOL,
        "strategies": report,
        "runtime_s": round(time.perf_counter() - started, 1),
    }
    write_result(args.out, result)
    columns = ["recall@1", "recall@10", "all_evidence@10", "all_evidence@20"]
    columns += [f"all_evidence_in_{BUDGET}_tokens", "cover_tokens_p50"]
    print(f"\n## Selection strategies on the same fused candidates ({len(questions)} questions)\n")
    print(two_level_table(report, ["strategy", "questions"], columns))
    print(f"\nwritten to {args.out}; total runtime {result['runtime_s']}s")


if __name__ == "__main__":
    main()
