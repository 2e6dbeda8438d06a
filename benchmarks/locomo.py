"""Retrieval quality of search on LoCoMo: evidence recall, context budgets, lane ablations.

    .venv/bin/python benchmarks/locomo.py [--dataset ../shared/datasets/locomo10.json]
        [--data-dir DIR] [--limit N] [--out benchmarks/results/locomo.json] [--llm]
        [--passes fused,windows_dense,facts_dense,keyword,...] [--smoke]

Each LoCoMo conversation is ingested into its own tenant of an embedded database
in --data-dir (default: a temporary dir) with the offline providers, then the
extraction jobs are drained. With a --data-dir that already holds every tenant
the ingest is skipped, so reruns only search.

Measured, for every question (categories 1 multi-hop, 2 temporal, 3 open-domain,
4 single-hop; 5 adversarial reported separately and kept out of "overall"):

- recall@k, k = 1, 5, 10, 20, 60: one of the first k results (window, note or
  fact) has a source turn id in the question's evidence set. search runs once
  with limit=60 and every k is a prefix of that ranking. Questions whose
  evidence has no parseable turn id are excluded (and counted).
- recall within a context budget of 1k, 2k and 4k tokens: the ranked results
  are taken in order while their text fits (tokens ~ words * 1.3); a hit is an
  evidence-bearing result inside that prefix.
- all-evidence@k: every evidence turn of the question is covered by the first k
  results (the bar multi-hop questions really need).
- evidence among the candidates at all: every question once more with the largest
  result list (the fused statement's best 200, in score order): the share of evidence
  turns some candidate covers, per half and category, also among the first 180 (what
  the limit-60 search fetches). A turn no candidate holds no reordering can reach.
- lane ablations, each a full pass over categories 1-4: fused (default lanes,
  expansion off, the product default), windows-dense only, facts-dense only,
  keyword only, fused with expansion, and fused without the graph lane. A
  single-lane pass sizes its lane at 60 (= limit) so that recall@60 is not
  capped by the default lane size.
- split protocol: every pass is also summarised on each half of the
  conversations (1-5 and 6-10): settings are chosen on one half and reported
  on the other. For the whole set and each half, fused is compared with the
  best single lane (windows, facts, keyword) at every k: fusion must never
  cost recall ("WORSE" rows).
- product latency: every question of categories 1-4 once more, searched as a client
  searches by default (the default limit, access recorded), after 50 warm-up searches:
  p50/p95 in process of the whole search, the query's embedding and the SQL statement,
  with the load average (the target of issue 30: p50 <= 12 ms, embedding <= 4 ms).
- latency: p50/p95 of search time and of the SQL statement alone (explain
  timings) over the fused pass.
- --llm: answer generation from the fused top results and LLM-judge accuracy
  (strict and generous) per category; needs ANTHROPIC_API_KEY or an Ollama
  configured through ELEPHANT_LLM_* settings, otherwise skipped and recorded so.

Targets (fused, categories 1-4): recall@10 >= 0.92 and recall@60 >= 0.99.

`--smoke`: every pass over a tiny slice (the first conversation's first two
sessions and the questions whose evidence lies in them; a synthetic
LoCoMo-shaped conversation when the dataset is absent), in seconds. Its recall
says nothing; it proves the benchmark still runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from psycopg import sql
from pydantic import BaseModel, ConfigDict, Field

from app.config import LLMSettings, Settings, load_settings
from app.errors import ConfigError
from app.providers.llm import LLM, LLMError, build_llm
from app.services.jobs.runner import drain
from app.services.memory import ingest as ingest_service
from app.services.retrieval.diversity import estimated_tokens
from app.services.retrieval.lanes import LaneSizes
from app.services.retrieval.schemas import SearchHit, SearchRequest, SearchTimings
from app.services.retrieval.search import search
from app.services.runtime import Elephant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ is not installed

from benchmarks.common import write_locomo_smoke_sample

DEFAULT_DATASET = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo10.json"
TENANT_PREFIX = "locomo"
LIMIT = 60
KS = (1, 5, 10, 20, 60)
ALL_EVIDENCE_KS = KS
BUDGETS = (1000, 2000, 4000)
TOKENS_PER_WORD = 1.3
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
SCORED = (1, 2, 3, 4)
TARGETS = {"recall@10": 0.92, "recall@60": 0.99}
# Lenient: "D8:6; D9:17", "D:11:26", "D30:05" and space-joined ids all parse.
TURN_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*0*(\d+)")


def turn_ids(texts: Iterable[str]) -> frozenset[str]:
    """Normalised LoCoMo dialogue ids ("D{session}:{turn}") found in ``texts``."""
    joined = " ".join(str(text) for text in texts)
    return frozenset(f"D{int(a)}:{int(b)}" for a, b in TURN_ID.findall(joined))


def approx_tokens(text: str) -> float:
    return len(text.split()) * TOKENS_PER_WORD


# ---------------------------------------------------------------- dataset


@dataclass(frozen=True)
class Question:
    sample_id: str
    tenant: str
    index: int
    category: int
    question: str
    answer: str
    evidence: frozenset[str]

    @property
    def key(self) -> str:
        return f"{self.sample_id}#{self.index}"


def load_questions(samples: list[dict[str, Any]]) -> list[Question]:
    questions = []
    for sample in samples:
        sample_id = str(sample.get("sample_id", "sample"))
        tenant = ingest_service.tenant_slug(f"{TENANT_PREFIX}-{sample_id}")
        for index, qa in enumerate(sample.get("qa", [])):
            answer = qa.get("answer", qa.get("adversarial_answer", ""))
            questions.append(
                Question(
                    sample_id=sample_id,
                    tenant=tenant,
                    index=index,
                    category=int(qa["category"]),
                    question=str(qa["question"]),
                    answer=str(answer),
                    evidence=turn_ids(qa.get("evidence") or []),
                )
            )
    return questions


# ---------------------------------------------------------------- ingest


def count_rows(elephant: Elephant, tenant: str, table: str) -> int:
    with elephant.db.tenant(tenant) as conn:
        row = conn.execute(
            sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
        ).fetchone()
        return int(row[0]) if row else 0


def ensure_ingested(
    elephant: Elephant, items: list[ingest_service.Item], tenants: list[str]
) -> dict[str, Any]:
    """Ingest the tenants that have no turns yet; refuse half-ingested ones."""
    expected: Counter[str] = Counter()
    for item in items:
        expected[item.tenant] += len(getattr(item.payload, "turns", []))
    present = {tenant: count_rows(elephant, tenant, "turns") for tenant in tenants}
    partial = [t for t in tenants if 0 < present[t] != expected[t]]
    if partial:
        detail = ", ".join(f"{t}: {present[t]}/{expected[t]} turns" for t in partial)
        raise SystemExit(f"partially ingested tenants ({detail}): use a fresh --data-dir")
    todo = [t for t in tenants if present[t] == 0]
    started = time.perf_counter()
    if todo:
        print(f"ingesting {len(todo)} conversation(s) (skipping {len(tenants) - len(todo)})")
        report = ingest_service.ingest(elephant, [item for item in items if item.tenant in todo])
        print(f"  {report.turns} turns, {report.windows_stored} windows; extracting facts")
    else:
        print(f"all {len(tenants)} conversations already ingested: skipping the ingest")
    jobs = drain(elephant)
    seconds = time.perf_counter() - started
    return {
        "ingested": todo,
        "skipped": [t for t in tenants if t not in todo],
        "seconds": round(seconds, 1),
        "jobs_drained": jobs,
        "turns": sum(count_rows(elephant, t, "turns") for t in tenants),
        "memories": sum(count_rows(elephant, t, "memories") for t in tenants),
        "facts": sum(count_rows(elephant, t, "facts") for t in tenants),
    }


# ---------------------------------------------------------------- one search, scored


@dataclass(frozen=True)
class Pass:
    name: str
    description: str
    lanes: LaneSizes
    expand: bool
    diversify: bool | None = None  # None: search.diversify; single lanes are shown plain
    decompose: bool | None = None  # None: search.decompose; single lanes take the question


PASSES = (
    Pass("fused", "default lanes, expansion off (the product default)", LaneSizes(), False),
    Pass(
        "windows_dense",
        "windows-dense lane only (60), no expansion",
        LaneSizes(windows=LIMIT, facts=0, keyword=0, graph=0, preferences=0),
        False,
        False,
        False,
    ),
    Pass(
        "facts_dense",
        "facts-dense lane only (60), no expansion",
        LaneSizes(windows=0, facts=LIMIT, keyword=0, graph=0, preferences=0),
        False,
        False,
        False,
    ),
    Pass(
        "keyword",
        "keyword lane only (60 memories + 60 facts), no expansion",
        LaneSizes(windows=0, facts=0, keyword=LIMIT, graph=0, preferences=0),
        False,
        False,
        False,
    ),
    Pass("fused_expand", "default lanes, expansion on (name variants)", LaneSizes(), True),
    Pass("fused_no_graph", "default lanes without the graph lane", LaneSizes(graph=0), False),
    Pass(
        "fused_no_decompose",
        "default lanes, the question alone (no sub-queries per name)",
        LaneSizes(),
        False,
        decompose=False,
    ),
    Pass(
        "fused_plain",
        "default lanes, no turn diversity (the fused RRF order as it is)",
        LaneSizes(),
        False,
        False,
    ),
)


@dataclass
class Outcome:
    question: Question
    first_rank: int | None  # 1-based rank of the first evidence-bearing result
    first_kind: str | None
    first_rank_by_kind: dict[str, int | None]  # "memory" (window/note) and "fact"
    budget_hits: dict[int, bool]
    all_evidence: dict[int, bool]
    cover_tokens: float | None  # tokens of the ranked prefix that covers all evidence
    total_ms: float
    sql_ms: float
    embedding_ms: float


def kind_group(kind: str) -> str:
    return "fact" if kind == "fact" else "memory"


def score_hits(
    question: Question, hits: Sequence[SearchHit], timings: SearchTimings | None
) -> Outcome:
    evidence = question.evidence
    hit_ids = [turn_ids(hit.source_turn_ids) for hit in hits]
    first_rank: int | None = None
    first_kind: str | None = None
    by_kind: dict[str, int | None] = {"memory": None, "fact": None}
    for rank, (hit, ids) in enumerate(zip(hits, hit_ids, strict=True), start=1):
        if ids & evidence:
            if first_rank is None:
                first_rank, first_kind = rank, hit.kind
            group = kind_group(hit.kind)
            if by_kind[group] is None:
                by_kind[group] = rank
    budget_hits = {}
    for budget in BUDGETS:
        used, found = 0.0, False
        for hit, ids in zip(hits, hit_ids, strict=True):
            used += approx_tokens(hit.text)
            if used > budget:
                break
            if ids & evidence:
                found = True
                break
        budget_hits[budget] = found
    all_evidence = {}
    for k in ALL_EVIDENCE_KS:
        covered: set[str] = set()
        for ids in hit_ids[:k]:
            covered |= ids
        all_evidence[k] = bool(evidence) and evidence <= covered
    cover_tokens: float | None = None
    covered, used = set(), 0.0
    for hit, ids in zip(hits, hit_ids, strict=True):
        used += approx_tokens(hit.text)
        covered |= ids
        if evidence and evidence <= covered:
            cover_tokens = used
            break
    return Outcome(
        question=question,
        first_rank=first_rank,
        first_kind=first_kind,
        first_rank_by_kind=by_kind,
        budget_hits=budget_hits,
        all_evidence=all_evidence,
        cover_tokens=cover_tokens,
        total_ms=timings.total if timings else 0.0,
        sql_ms=timings.sql if timings else 0.0,
        embedding_ms=timings.embedding if timings else 0.0,
    )


def run_search(elephant: Elephant, question: Question, spec: Pass) -> list[SearchHit]:
    return search(elephant, question.tenant, request(question, spec), record_access=False).hits


def request(question: Question, spec: Pass) -> SearchRequest:
    return SearchRequest(
        query=question.question,
        limit=LIMIT,
        expand=spec.expand,
        explain=True,
        lanes=spec.lanes,
        diversify=spec.diversify,
        decompose=spec.decompose,
    )


def run_pass(elephant: Elephant, questions: Sequence[Question], spec: Pass) -> list[Outcome]:
    outcomes = []
    started = time.perf_counter()
    for number, question in enumerate(questions, start=1):
        result = search(elephant, question.tenant, request(question, spec), record_access=False)
        timings = result.explain.timings_ms if result.explain else None
        outcomes.append(score_hits(question, result.hits, timings))
        if number % 250 == 0 or number == len(questions):
            elapsed = time.perf_counter() - started
            print(f"  {spec.name}: {number}/{len(questions)} ({elapsed:.0f}s)", flush=True)
    return outcomes


# ---------------------------------------------------------------- token budgets

MAX_TOKENS = (500, 1000, 2000, 4000)
# Passes that are not one search per question: search(max_tokens=...) at each budget.
EXTRA_PASSES = ("max_tokens",)


def covers(evidence: frozenset[str], hits: Sequence[SearchHit]) -> tuple[bool, bool]:
    """(some evidence turn is in ``hits``, every one is)."""
    covered = set().union(*(turn_ids(hit.source_turn_ids) for hit in hits)) if hits else set()
    return bool(covered & evidence), bool(evidence) and evidence <= covered


def budget_pass(elephant: Elephant, questions: Sequence[Question]) -> dict[str, Any]:
    """search(max_tokens=b) as shipped against the fused ranking (limit 60) taken in order
    until the first result that does not fit, both counted with the product's token
    estimate, per half of the split: does some / every evidence turn fit in b tokens?"""
    tallies: dict[tuple[str, int, str], list[tuple[bool, bool]]] = defaultdict(list)
    tenants = list(dict.fromkeys(q.tenant for q in questions))
    halves = split_halves(tenants)
    for number, question in enumerate(questions, start=1):
        if not question.evidence:
            continue
        ranked = run_search(elephant, question, PASSES[0])
        groups = [name for name, members in halves.items() if question.tenant in members]
        for budget in MAX_TOKENS:
            prefix, used = [], 0
            for hit in ranked:
                used += estimated_tokens(hit.text)
                if used > budget:
                    break
                prefix.append(hit)
            asked = SearchRequest(query=question.question, max_tokens=budget)
            filled = search(elephant, question.tenant, asked, record_access=False).hits
            for group in groups:
                tallies[(group, budget, "in order")].append(covers(question.evidence, prefix))
                tallies[(group, budget, "max_tokens")].append(covers(question.evidence, filled))
        if number % 500 == 0:
            print(f"  max_tokens: {number}/{len(questions)}", flush=True)
    report: dict[str, Any] = {}
    for (group, budget, way), flags in tallies.items():
        row = report.setdefault(group, {}).setdefault(str(budget), {})
        row[way] = {
            "some_evidence": rate([some for some, _ in flags]),
            "all_evidence": rate([every for _, every in flags]),
        }
    return report


# ---------------------------------------------------------------- candidates at all

CANDIDATES = 200  # the most one search returns: the fused statement's best 200


def candidate_hits(elephant: Elephant, question: Question) -> list[SearchHit]:
    """The fused statement's best CANDIDATES results for the question, in score order (no
    turn diversity): fewer than CANDIDATES means every candidate any lane brought."""
    asked = SearchRequest(query=question.question, limit=CANDIDATES, diversify=False)
    return search(elephant, question.tenant, asked, record_access=False).hits


def candidate_pass(
    elephant: Elephant, questions: Sequence[Question], tenants: Sequence[str], pool: int
) -> dict[str, Any]:
    """Can any ordering reach the evidence? Every question once more, with the largest
    result list: per half and category, the share of evidence turns covered by some
    candidate (a window, note or fact whose source turns hold it), among all of them and
    among the first ``pool`` (what the fused pass's search fetches), the questions whose
    every evidence turn is a candidate, and each question's missing turns."""
    halves = split_halves(tenants)
    rows: list[tuple[Question, int, frozenset[str], frozenset[str]]] = []
    for number, question in enumerate(questions, start=1):
        if not question.evidence:
            continue
        hits = candidate_hits(elephant, question)
        found = set().union(*(turn_ids(hit.source_turn_ids) for hit in hits)) if hits else set()
        first = (
            set().union(*(turn_ids(hit.source_turn_ids) for hit in hits[:pool])) if hits else set()
        )
        rows.append((question, len(hits), frozenset(found), frozenset(first)))
        if number % 500 == 0:
            print(f"  candidates: {number}/{len(questions)}", flush=True)
    report: dict[str, Any] = {"candidates": CANDIDATES, "first": pool, "halves": {}}
    for half, members in halves.items():
        part = [row for row in rows if row[0].tenant in members]
        table = {
            CATEGORIES[c]: reach_summary([r for r in part if r[0].category == c], pool)
            for c in SCORED
        }
        table["overall"] = reach_summary(part, pool)
        report["halves"][half] = table
    report["missing"] = {
        q.key: sorted(q.evidence - found) for q, _, found, _ in rows if q.evidence - found
    }
    return report


def reach_summary(
    rows: Sequence[tuple[Question, int, frozenset[str], frozenset[str]]], pool: int
) -> dict[str, Any]:
    """Evidence turns among the candidates (all, and the first ``pool``), questions with
    all their evidence there, the candidates' count (p50) and how often it hit the cap."""
    turns = sum(len(q.evidence) for q, _, _, _ in rows)
    sizes = sorted(size for _, size, _, _ in rows)
    return {
        "questions": len(rows),
        "evidence_turns": turns,
        "turns_among_candidates": round(sum(len(q.evidence & f) for q, _, f, _ in rows) / turns, 4)
        if turns
        else None,
        f"turns_among_first_{pool}": round(
            sum(len(q.evidence & first) for q, _, _, first in rows) / turns, 4
        )
        if turns
        else None,
        "all_among_candidates": rate([q.evidence <= f for q, _, f, _ in rows]),
        "candidates_p50": sizes[len(sizes) // 2] if sizes else None,
        "capped": sum(1 for size in sizes if size >= CANDIDATES),
    }


# ---------------------------------------------------------------- summaries


def rate(flags: Sequence[bool]) -> float | None:
    return round(sum(flags) / len(flags), 4) if flags else None


def summarise(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    scored = [o for o in outcomes if o.question.evidence]
    summary: dict[str, Any] = {
        "questions": len(outcomes),
        "scored": len(scored),
        "no_evidence": len(outcomes) - len(scored),
    }
    for k in KS:
        summary[f"recall@{k}"] = rate(
            [o.first_rank is not None and o.first_rank <= k for o in scored]
        )
    for budget in BUDGETS:
        summary[f"budget@{budget // 1000}k"] = rate([o.budget_hits[budget] for o in scored])
    for k in ALL_EVIDENCE_KS:
        summary[f"all_evidence@{k}"] = rate([o.all_evidence[k] for o in scored])
    # Tokens to cover all evidence: the median over questions, a question whose evidence
    # the 60 results never cover counting as infinite (so the median can be "none").
    costs = sorted(o.cover_tokens if o.cover_tokens is not None else float("inf") for o in scored)
    middle = costs[len(costs) // 2] if costs else float("inf")
    summary["cover_tokens_p50"] = None if middle == float("inf") else round(middle)
    for group in ("memory", "fact"):
        ranks = [o.first_rank_by_kind[group] for o in scored]
        summary[f"{group}_recall@10"] = rate([r is not None and r <= 10 for r in ranks])
    return summary


def by_category(outcomes: Sequence[Outcome]) -> dict[str, dict[str, Any]]:
    groups: dict[int, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        groups[outcome.question.category].append(outcome)
    table = {CATEGORIES[c]: summarise(groups[c]) for c in sorted(groups)}
    table["overall"] = summarise([o for o in outcomes if o.question.category in SCORED])
    return table


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (q in 0..100)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def shipped_latency(elephant: Elephant, questions: Sequence[Question]) -> dict[str, Any]:
    """Search as shipped: SearchRequest(query) with the defaults, access recorded; the
    embedding and SQL split read from explain's timings (which only adds the timings)."""
    for question in questions[:50]:  # other texts: the embedder's cache must answer none
        warm_up = SearchRequest(query=f"{question.question} (warm-up)")
        search(elephant, question.tenant, warm_up)
    load_before = os.getloadavg()[0]
    total, embedding, sql_ms = [], [], []
    for question in questions:
        found = search(
            elephant, question.tenant, SearchRequest(query=question.question, explain=True)
        )
        assert found.explain is not None
        total.append(found.explain.timings_ms.total)
        embedding.append(found.explain.timings_ms.embedding)
        sql_ms.append(found.explain.timings_ms.sql)

    def stats(values: list[float]) -> dict[str, float]:
        return {"p50": round(percentile(values, 50), 2), "p95": round(percentile(values, 95), 2)}

    return {
        "searches": len(questions),
        "warm_up": 50,
        "total_ms": stats(total),
        "embedding_ms": stats(embedding),
        "sql_ms": stats(sql_ms),
        "load_average_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "decompose_interleaved": decompose_cost(elephant, questions),
    }


def decompose_cost(elephant: Elephant, questions: Sequence[Question]) -> dict[str, Any]:
    """Search as shipped with and without sub-queries, interleaved question by question in
    alternating order (ABBA: the embedder's cache, which answers the second search of a
    question, favours neither): total p50 / p95 ms of each."""
    times: dict[bool, list[float]] = {True: [], False: []}
    for number, question in enumerate(questions):
        order = (True, False) if number % 2 == 0 else (False, True)
        for decompose in order:
            asked = SearchRequest(query=question.question, decompose=decompose, explain=True)
            found = search(elephant, question.tenant, asked)
            assert found.explain is not None
            times[decompose].append(found.explain.timings_ms.total)
    return {
        ("on" if decompose else "off"): {
            "p50": round(percentile(values, 50), 2),
            "p95": round(percentile(values, 95), 2),
        }
        for decompose, values in times.items()
    }


def latency(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    def stats(values: list[float]) -> dict[str, float]:
        return {
            "p50": round(percentile(values, 50), 2),
            "p95": round(percentile(values, 95), 2),
            "mean": round(statistics.fmean(values), 2) if values else float("nan"),
        }

    return {
        "searches": len(outcomes),
        "total_ms": stats([o.total_ms for o in outcomes]),
        "sql_ms": stats([o.sql_ms for o in outcomes]),
        "embedding_ms": stats([o.embedding_ms for o in outcomes]),
    }


def first_hit_kinds(outcomes: Sequence[Outcome]) -> dict[str, int]:
    kinds = Counter(o.first_kind or "none" for o in outcomes if o.question.evidence)
    return dict(sorted(kinds.items()))


def rank_histogram(outcomes: Sequence[Outcome]) -> dict[str, int]:
    """Where the first evidence-bearing result landed (categories 1-4)."""
    buckets = {"1": 0, "2-5": 0, "6-10": 0, "11-20": 0, "21-60": 0, "miss": 0}
    for o in outcomes:
        if not o.question.evidence or o.question.category not in SCORED:
            continue
        r = o.first_rank
        key = (
            "miss"
            if r is None
            else "1"
            if r == 1
            else "2-5"
            if r <= 5
            else "6-10"
            if r <= 10
            else "11-20"
            if r <= 20
            else "21-60"
        )
        buckets[key] += 1
    return buckets


# ---------------------------------------------------------------- split protocol

SINGLE_LANES = ("windows_dense", "facts_dense", "keyword")


def split_halves(tenants: Sequence[str]) -> dict[str, frozenset[str]]:
    """The split protocol's halves: settings are chosen on one, reported on the other."""
    middle = (len(tenants) + 1) // 2
    first, second = tenants[:middle], tenants[middle:]
    halves = {"all": frozenset(tenants)}
    if second:
        halves[f"conversations 1-{middle}"] = frozenset(first)
        halves[f"conversations {middle + 1}-{len(tenants)}"] = frozenset(second)
    return halves


def versus_best_lane(summaries: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Fused against the best single lane at every k: fusion must never cost recall."""
    table: dict[str, dict[str, Any]] = {}
    lanes = [name for name in SINGLE_LANES if name in summaries]
    if "fused" not in summaries or not lanes:
        return table
    for column in [f"recall@{k}" for k in KS] + [f"all_evidence@{k}" for k in ALL_EVIDENCE_KS]:
        best = max(lanes, key=lambda name: summaries[name][column] or 0.0)
        fused, lane = summaries["fused"][column] or 0.0, summaries[best][column] or 0.0
        table[column] = {
            "fused": fused,
            "best_lane": best,
            "best_lane_value": lane,
            "margin": round(fused - lane, 4),
            "fused_at_least_best": fused >= lane,
        }
    return table


def split_report(
    outcomes: dict[str, list[Outcome]], tenants: Sequence[str]
) -> dict[str, dict[str, Any]]:
    report: dict[str, dict[str, Any]] = {}
    for name, members in split_halves(tenants).items():
        summaries = {
            spec: summarise(
                [o for o in rows if o.question.tenant in members and o.question.category in SCORED]
            )
            for spec, rows in outcomes.items()
        }
        categories = {
            CATEGORIES[category]: {
                spec: summarise(
                    [
                        o
                        for o in rows
                        if o.question.tenant in members and o.question.category == category
                    ]
                )
                for spec, rows in outcomes.items()
            }
            for category in SCORED
        }
        report[name] = {
            "conversations": sorted(members),
            "passes": summaries,
            "fused_vs_best_lane": versus_best_lane(summaries),
            "categories": categories,
        }
    return report


def coverage_rows(split: dict[str, dict[str, Any]]) -> list[list[Any]]:
    """Per half and category: fused all-evidence@k and tokens to cover all evidence, with
    the best single lane's all-evidence@10 and tokens beside."""
    rows = []
    for half, part in split.items():
        for category, passes in [*part["categories"].items(), ("overall", part["passes"])]:
            fused = passes.get("fused")
            if not fused or not fused["scored"]:
                continue
            lanes = [name for name in SINGLE_LANES if name in passes]
            best = max(lanes, key=lambda n: passes[n]["all_evidence@10"] or 0.0) if lanes else None
            rows.append(
                [
                    half,
                    category,
                    fused["scored"],
                    *(fused[f"all_evidence@{k}"] for k in (5, 10, 20, 60)),
                    fused["cover_tokens_p50"],
                    best or "-",
                    passes[best]["all_evidence@10"] if best else None,
                    passes[best]["cover_tokens_p50"] if best else None,
                ]
            )
    return rows


# ---------------------------------------------------------------- printing


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def markdown(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(fmt(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


RECALL_COLUMNS = [f"recall@{k}" for k in KS] + [f"budget@{b // 1000}k" for b in BUDGETS]


def recall_table(categories: dict[str, dict[str, Any]]) -> str:
    order = [CATEGORIES[c] for c in SCORED] + ["overall", CATEGORIES[5]]
    rows = []
    for name in order:
        if name not in categories:
            continue
        row = categories[name]
        label = "overall (1-4)" if name == "overall" else name
        if name == CATEGORIES[5]:
            label = "adversarial (5, not in overall)"
        rows.append([label, row["scored"], *(row[c] for c in RECALL_COLUMNS)])
    return markdown(["category", "n", *RECALL_COLUMNS], rows)


# ---------------------------------------------------------------- LLM answer + judge


class Answer(BaseModel):
    answer: str = Field(description="A short answer (a few words), or 'not mentioned'.")


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    verdict: Literal["CORRECT", "WRONG"]


ANSWER_SYSTEM = """\
You answer questions about a long conversation between two people using only the \
numbered memories given. Dates in brackets are when the words were said; resolve \
relative dates ("last week") against them. Answer in a few words. If the memories \
do not contain the answer, answer "not mentioned"."""

JUDGE_STRICT = """\
You grade an answer against a gold answer. CORRECT only if the generated answer states \
the same facts as the gold answer: same people, things and dates (the same day, or the \
same period if the gold gives a period). Missing a required part, adding a wrong detail, \
or hedging between options is WRONG."""

JUDGE_GENEROUS = """\
You grade an answer against a gold answer. Be generous: CORRECT if the generated answer \
refers to the same thing as the gold answer, even if it is longer, worded differently, \
or gives a date in another format or as a relative expression that resolves to the same \
day or period. WRONG only if it contradicts the gold answer or misses its point."""

JUDGES = {"strict": JUDGE_STRICT, "generous": JUDGE_GENEROUS}


def resolve_llm() -> tuple[LLMSettings | None, str]:
    """The answering/judging LLM from the environment, or why there is none."""
    try:
        configured = load_settings().llm
    except ConfigError as exc:
        return None, f"settings could not be read: {exc.message}"
    if configured.provider == "ollama":
        return configured, f"ollama model {configured.model} at {configured.ollama_url}"
    if configured.anthropic_api_key:
        return configured.model_copy(update={"provider": "anthropic"}), (
            f"anthropic model {configured.model}"
        )
    return None, (
        "no ANTHROPIC_API_KEY is set and no Ollama is configured "
        "(ELEPHANT_LLM_PROVIDER=ollama): answer generation and LLM-judge scoring skipped"
    )


def context_block(hits: Sequence[SearchHit], budget: int) -> str:
    lines, used = [], 0.0
    for number, hit in enumerate(hits, start=1):
        used += approx_tokens(hit.text)
        if used > budget:
            break
        when = f"[{hit.event_at:%d %B %Y}] " if hit.kind == "fact" and hit.event_at else ""
        lines.append(f"{number}. ({hit.kind}) {when}{hit.text}")
    return "\n\n".join(lines)


@dataclass
class Graded:
    category: int
    verdicts: dict[str, bool] = field(default_factory=dict)
    error: str | None = None


def answer_and_judge(llm: LLM, question: Question, hits: Sequence[SearchHit]) -> Graded:
    graded = Graded(category=question.category)
    try:
        answer = llm.complete_json(
            system=ANSWER_SYSTEM,
            prompt=f"Memories:\n{context_block(hits, 4000)}\n\nQuestion: {question.question}",
            schema=Answer,
            max_tokens=200,
        ).value.answer
        for name, system in JUDGES.items():
            verdict = llm.complete_json(
                system=system,
                prompt=(
                    f"Question: {question.question}\nGold answer: {question.answer}\n"
                    f"Generated answer: {answer}\n\nGive your verdict."
                ),
                schema=Verdict,
                max_tokens=50,
            ).value.verdict
            graded.verdicts[name] = verdict == "CORRECT"
    except LLMError as exc:
        graded.error = exc.message
        graded.verdicts = dict.fromkeys(JUDGES, False)
    return graded


def llm_pass(elephant: Elephant, questions: Sequence[Question], llm: LLM) -> dict[str, Any]:
    """Categories 1-4 (adversarial questions have no gold answer to judge)."""
    fused = PASSES[0]
    graded: list[Graded] = []
    scored = [q for q in questions if q.category in SCORED]
    for number, question in enumerate(scored, start=1):
        graded.append(answer_and_judge(llm, question, run_search(elephant, question, fused)))
        if number % 50 == 0 or number == len(scored):
            print(f"  llm: {number}/{len(scored)}", flush=True)

    def accuracy(rows: list[Graded]) -> dict[str, Any]:
        out: dict[str, Any] = {
            "questions": len(rows),
            "errors": sum(r.error is not None for r in rows),
        }
        for name in JUDGES:
            out[name] = rate([r.verdicts[name] for r in rows])
        return out

    result = {CATEGORIES[c]: accuracy([g for g in graded if g.category == c]) for c in SCORED}
    result["overall"] = accuracy(graded)
    return result


# ---------------------------------------------------------------- main


def setting_overrides(pairs: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``["search.passage_share=0"]`` -> ``{"search": {"passage_share": 0}}`` (JSON values,
    else the text as it is)."""
    sections: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        section, dot, name = key.strip().partition(".")
        if not sep or not dot or not name:
            raise SystemExit(f"--set {pair!r}: write SECTION.KEY=VALUE, e.g. search.rrf_k=30")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        sections.setdefault(section, {})[name] = value
    return sections


@dataclass(frozen=True)
class LocomoData:
    questions: list[Question]
    tenants: list[str]  # one per conversation, in the dataset's order
    items: list[ingest_service.Item]
    source: str  # the dataset read, or a description of the smoke sample


def read_dataset(dataset: Path, limit: int | None, smoke: bool) -> LocomoData:
    """The questions, tenants and ingest items of the first ``limit`` conversations;
    ``smoke``: the tiny LoCoMo-shaped sample instead."""
    with tempfile.TemporaryDirectory(prefix="elephant-locomo-sample-") as tmp:
        source = str(dataset)
        if smoke:
            dataset, source = write_locomo_smoke_sample(dataset, Path(tmp))
        samples = json.loads(dataset.read_text())[:limit]
        items = ingest_service.read_items(dataset, TENANT_PREFIX, "locomo", split_tenants=True)
    tenants = list(dict.fromkeys(item.tenant for item in items))[:limit]
    kept = [item for item in items if item.tenant in tenants]
    return LocomoData(load_questions(samples), tenants, kept, source)


def two_level_table(
    nested: dict[str, dict[str, dict[str, Any]]], headers: Sequence[str], columns: Sequence[str]
) -> str:
    """A markdown table of ``{outer: {inner: {column: value}}}``, a row per inner key."""
    rows = [
        [outer, inner, *(values.get(column) for column in columns)]
        for outer, inners in nested.items()
        for inner, values in inners.items()
    ]
    return markdown([*headers, *columns], rows)


def write_result(out: Path, result: dict[str, Any]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))


def locomo_parser(description: str | None, out: Path) -> argparse.ArgumentParser:
    """The options every LoCoMo benchmark takes: the dataset, where the database is kept,
    how many conversations, where the JSON goes."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--data-dir", type=Path, default=None, help="Keep the database here.")
    parser.add_argument("--limit", type=int, default=None, help="Only the first N conversations.")
    parser.add_argument("--out", type=Path, default=out)
    return parser


def main() -> None:
    parser = locomo_parser(__doc__, Path("benchmarks/results/locomo.json"))
    parser.add_argument("--llm", action="store_true", help="Also answer and judge with an LLM.")
    parser.add_argument(
        "--passes",
        default=",".join([spec.name for spec in PASSES] + list(EXTRA_PASSES)),
        help="Comma-separated passes to run (fused is always run).",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="Override a setting for this run (an ablation), e.g. search.passage_share=0; "
        "repeatable. Settings that shape the ingest need a fresh --data-dir.",
    )
    parser.add_argument(
        "--smoke", action="store_true", help="two sessions of one conversation, in seconds"
    )
    args = parser.parse_args()
    overrides = setting_overrides(args.set)
    chosen = {"fused", *(name.strip() for name in args.passes.split(",") if name.strip())}
    chosen_extras = chosen & set(EXTRA_PASSES)
    chosen -= chosen_extras
    unknown = chosen - {spec.name for spec in PASSES}
    if unknown:
        names = [spec.name for spec in PASSES] + list(EXTRA_PASSES)
        parser.error(f"unknown passes {sorted(unknown)}; choose from {names}")
    started = time.perf_counter()

    data = read_dataset(args.dataset, args.limit, args.smoke)
    questions, tenants, items, source = data.questions, data.tenants, data.items, data.source
    assert {q.tenant for q in questions} <= set(tenants), "tenant naming drifted from ingest"

    llm_settings, llm_reason = resolve_llm() if args.llm else (None, "not requested (--llm)")
    if args.llm and llm_settings is None:
        print(f"LLM evaluation skipped: {llm_reason}")

    with contextlib.ExitStack() as stack:
        data_dir = args.data_dir or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="elephant-locomo-"))
        )
        data_dir.mkdir(parents=True, exist_ok=True)
        settings = Settings.model_validate(
            {"data_dir": str(data_dir), "log": {"level": "WARNING"}, **overrides}
        )
        elephant = Elephant.open(settings, use_llm_from_settings=False)
        stack.callback(elephant.close)
        ingest_info = ensure_ingested(elephant, items, tenants)
        print(
            f"{len(tenants)} conversations: {ingest_info['turns']} turns, "
            f"{ingest_info['memories']} memories, {ingest_info['facts']} facts "
            f"({ingest_info['seconds']}s)"
        )

        recall_questions = [q for q in questions if q.category in SCORED]
        # Warm up the embedder and the connection pool outside the timings.
        for question in questions[:3]:
            run_search(elephant, question, PASSES[0])

        # First: the passes below would leave every question in the embedder's cache.
        product_latency = shipped_latency(elephant, recall_questions)
        passes: dict[str, dict[str, Any]] = {}
        outcomes: dict[str, list[Outcome]] = {}
        for spec in (spec for spec in PASSES if spec.name in chosen):
            # The fused pass also scores the adversarial questions (reported apart).
            pool = questions if spec.name == "fused" else recall_questions
            pass_started = time.perf_counter()
            outcomes[spec.name] = run_pass(elephant, pool, spec)
            passes[spec.name] = {
                "description": spec.description,
                "lanes": spec.lanes.model_dump(),
                "expand": spec.expand,
                "diversify": spec.diversify,
                "seconds": round(time.perf_counter() - pass_started, 1),
                "categories": by_category(outcomes[spec.name]),
                "latency_ms": latency(
                    [o for o in outcomes[spec.name] if o.question.category in SCORED]
                ),
            }

        budgets = budget_pass(elephant, recall_questions) if "max_tokens" in chosen_extras else {}
        # What the fused pass's search fetches (limit x search.diversity_pool), then all.
        first = min(CANDIDATES, LIMIT * elephant.settings.search.diversity_pool)
        reach = candidate_pass(elephant, recall_questions, tenants, first)
        llm_result: dict[str, Any] = {
            "requested": args.llm,
            "status": "skipped",
            "reason": llm_reason,
        }
        if llm_settings is not None:
            llm = build_llm(llm_settings)
            assert llm is not None
            llm_result = {
                "requested": True,
                "status": "ran",
                "model": f"{llm.provider}:{llm.model}",
                "accuracy": llm_pass(elephant, questions, llm),
            }
        search_settings = elephant.settings.search.model_dump()

    fused = passes["fused"]
    fused_scored = [o for o in outcomes["fused"] if o.question.category in SCORED]
    overall = fused["categories"]["overall"]
    targets = {
        name: {"target": goal, "measured": overall[name], "met": (overall[name] or 0) >= goal}
        for name, goal in TARGETS.items()
    }
    category_counts = Counter(CATEGORIES[q.category] for q in questions)
    result: dict[str, Any] = {
        "smoke": args.smoke,
        "dataset": source,
        "conversations": len(tenants),
        "questions": dict(sorted(category_counts.items())),
        "questions_without_evidence": sum(1 for q in questions if not q.evidence),
        "limit": LIMIT,
        "budget_tokens": {"approximation": f"words * {TOKENS_PER_WORD}", "budgets": BUDGETS},
        "search_settings": search_settings,
        "overrides": args.set,
        "ingest": ingest_info,
        "fused": fused["categories"],
        "targets": targets,
        "latency_ms": fused["latency_ms"],
        "product_latency_ms": product_latency,
        "first_hit_kind": first_hit_kinds(fused_scored),
        "first_hit_rank": rank_histogram(fused_scored),
        "ablations": passes,
        "split": split_report(outcomes, tenants),
        "max_tokens": budgets,
        "candidates": reach,
        "llm": llm_result,
        # Rank of the first evidence-bearing result per question (null: not in the top 60).
        "first_rank_fused": {o.question.key: o.first_rank for o in outcomes["fused"]},
    }
    result["runtime_s"] = round(time.perf_counter() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    report(result)
    print(f"\nwritten to {args.out}; total runtime {result['runtime_s']}s")


def report(result: dict[str, Any]) -> None:
    fused = result["fused"]
    print(
        f"\n## LoCoMo retrieval, fused search (limit {LIMIT}); "
        f"{result['questions_without_evidence']} questions without evidence excluded\n"
    )
    print(recall_table(fused))
    print()
    for name, target in result["targets"].items():
        verdict = "met" if target["met"] else "NOT met"
        print(
            f"target {name} >= {target['target']}: measured {fmt(target['measured'])} ({verdict})"
        )

    print("\n## Evidence coverage and which results carry the hits (fused)\n")
    rows = []
    for name, row in fused.items():
        rows.append(
            [
                name,
                row["all_evidence@10"],
                row["all_evidence@60"],
                row["memory_recall@10"],
                row["fact_recall@10"],
            ]
        )
    headers = ["category", "all-evidence@10", "all-evidence@60", "windows r@10", "facts r@10"]
    print(markdown(headers, rows))
    print(
        "\n## All the evidence, per half of the split and category (fused; tokens: the median "
        "tokens of the ranked results needed to cover every evidence turn, - when the 60 "
        "results do not cover it for half the questions)\n"
    )
    headers = [
        "conversations",
        "category",
        "n",
        "all-ev@5",
        "all-ev@10",
        "all-ev@20",
        "all-ev@60",
        "tokens",
        "best lane",
        "its all-ev@10",
        "its tokens",
    ]
    print(markdown(headers, coverage_rows(result["split"])))
    print(f"\nfirst evidence-bearing result kind (1-4): {result['first_hit_kind']}")
    print(f"first evidence-bearing rank (1-4): {result['first_hit_rank']}")

    print("\n## Lane ablations (categories 1-4, overall)\n")
    rows = []
    for name, spec in result["ablations"].items():
        row = spec["categories"]["overall"]
        p50 = spec["latency_ms"]["total_ms"]["p50"]
        rows.append([name, *(row[c] for c in RECALL_COLUMNS), p50, spec["seconds"]])
    print(markdown(["pass", *RECALL_COLUMNS, "p50 ms", "pass s"], rows))

    print("\n## Lane ablations: recall@10 by category\n")
    rows = []
    for name, spec in result["ablations"].items():
        cats = spec["categories"]
        rows.append([name, *(cats[CATEGORIES[c]]["recall@10"] for c in SCORED)])
    print(markdown(["pass", *(CATEGORIES[c] for c in SCORED)], rows))

    print("\n## Split protocol: fused against the best single lane (categories 1-4)\n")
    rows = []
    for half, part in result["split"].items():
        for column, row in part["fused_vs_best_lane"].items():
            verdict = "ok" if row["fused_at_least_best"] else "WORSE"
            rows.append(
                [half, column, row["fused"], row["best_lane"], row["best_lane_value"], verdict]
            )
    print(markdown(["conversations", "measure", "fused", "best lane", "its value", ""], rows))

    reach = result["candidates"]
    print(
        f"\n## Evidence among the candidates at all (the fused statement's best "
        f"{reach['candidates']}; first {reach['first']}: what the fused pass fetches)\n"
    )
    rows = [
        [
            half,
            category,
            row["questions"],
            row["evidence_turns"],
            row["turns_among_candidates"],
            row[f"turns_among_first_{reach['first']}"],
            row["all_among_candidates"],
            row["candidates_p50"],
            row["capped"],
        ]
        for half, table in reach["halves"].items()
        for category, row in table.items()
    ]
    headers = ["conversations", "category", "n", "evidence turns", "turns among candidates"]
    headers += [f"among first {reach['first']}", "all of a question's", "candidates p50", "capped"]
    print(markdown(headers, rows))

    if result["max_tokens"]:
        print(
            "\n## max_tokens: search(max_tokens=b) against the fused ranking taken in order "
            "until a result does not fit (some / every evidence turn inside b tokens)\n"
        )
        rows = []
        for half, budgets in result["max_tokens"].items():
            for budget, ways in budgets.items():
                before, after = ways["in order"], ways["max_tokens"]
                rows.append(
                    [
                        half,
                        budget,
                        before["some_evidence"],
                        after["some_evidence"],
                        before["all_evidence"],
                        after["all_evidence"],
                    ]
                )
        headers = ["conversations", "tokens", "some: in order", "some: max_tokens"]
        print(markdown([*headers, "every: in order", "every: max_tokens"], rows))

    lat = result["latency_ms"]
    print(f"\n## Latency, fused pass ({lat['searches']} searches, categories 1-4)\n")
    rows = [
        [part, lat[key]["p50"], lat[key]["p95"], lat[key]["mean"]]
        for part, key in (
            ("search total", "total_ms"),
            ("SQL", "sql_ms"),
            ("embedding", "embedding_ms"),
        )
    ]
    print(markdown(["ms", "p50", "p95", "mean"], rows))

    shipped = result["product_latency_ms"]
    print(
        f"\n## Latency as shipped ({shipped['searches']} searches, default limit, access "
        f"recorded, load {shipped['load_average_1m']})\n"
    )
    rows = [
        [part, shipped[key]["p50"], shipped[key]["p95"]]
        for part, key in (
            ("search total", "total_ms"),
            ("embedding", "embedding_ms"),
            ("SQL", "sql_ms"),
        )
    ]
    print(markdown(["ms", "p50", "p95"], rows))
    cost = shipped["decompose_interleaved"]
    print(
        f"\nwith / without sub-queries (search.decompose), interleaved: p50 "
        f"{cost['on']['p50']} / {cost['off']['p50']} ms, p95 {cost['on']['p95']} / "
        f"{cost['off']['p95']} ms"
    )

    llm = result["llm"]
    print("\n## LLM answer + judge\n")
    if llm["status"] != "ran":
        print(f"skipped: {llm['reason']}")
    else:
        rows = [
            [name, row["questions"], row["strict"], row["generous"], row["errors"]]
            for name, row in llm["accuracy"].items()
        ]
        print(f"model {llm['model']}\n")
        print(markdown(["category", "n", "strict", "generous", "errors"], rows))


if __name__ == "__main__":
    main()
