"""Which stage could reach the evidence no lane brings? A LoCoMo analysis, not a feature.

    .venv/bin/python benchmarks/locomo_reach.py --data-dir DIR
        [--out benchmarks/results/locomo_reach.json] [--smoke] [--set search.x=y ...]

For every multi-hop and temporal question (and the other categories, for scale), the
fused statement's best 200 candidates (benchmarks/locomo.py's candidate pass); for each
evidence turn that none of them covers, its structural relation to the candidates that
are there, per half of the split:

- same session: some candidate holds a turn of the turn's session; the distance in
  turns to the nearest such turn (1 = an adjacent turn), from any candidate and from
  the first 10 (the seeds an expansion lane starts from);
- facts: the turn has an extracted fact at all; one of its facts shares an entity
  (fact_entities) with a candidate fact, with a seed fact, and the same without the
  hub entities (linked to more than --hub facts of the conversation); one of its facts
  has the subject of a candidate fact;
- the question: one of its facts is about, or mentions, an entity the question names
  (what a subject timeline would start from).

A relation that holds for most missing turns says which stage can bring them.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ is not installed

from app.config import Settings
from app.services.graph.linking import query_candidates
from app.services.graph.store import entity_key
from app.services.retrieval.schemas import SearchHit
from app.services.runtime import Elephant
from benchmarks.locomo import (
    CATEGORIES,
    SCORED,
    Question,
    candidate_hits,
    ensure_ingested,
    locomo_parser,
    markdown,
    read_dataset,
    setting_overrides,
    split_halves,
    turn_ids,
    write_result,
)

SEEDS = 10
HUB = 100
FACTS = """
SELECT f.id::text, f.subject, f.source_turn_ids,
       coalesce(array_agg(fe.entity_key) FILTER (WHERE fe.entity_key IS NOT NULL), '{}')
FROM facts AS f
LEFT JOIN fact_entities AS fe ON fe.fact_id = f.id AND fe.tenant_id = f.tenant_id
WHERE f.tenant_id = %s
GROUP BY f.id
"""
DISTANCES = (("adjacent (1)", 1), ("<= 2 turns", 2), ("<= 5 turns", 5), ("<= 10 turns", 10))


@dataclass(frozen=True)
class Fact:
    subject: str | None
    turns: frozenset[str]
    entities: frozenset[str]


@dataclass
class Conversation:
    """One tenant's facts: by id, by source turn, and how many facts each entity links."""

    facts: dict[str, Fact]
    by_turn: dict[str, list[Fact]]
    links: dict[str, int]

    def hubs(self, limit: int) -> frozenset[str]:
        return frozenset(key for key, count in self.links.items() if count > limit)


def load_conversation(elephant: Elephant, tenant: str) -> Conversation:
    facts: dict[str, Fact] = {}
    by_turn: dict[str, list[Fact]] = defaultdict(list)
    links: dict[str, int] = defaultdict(int)
    with elephant.db.tenant(tenant) as conn:
        for fact_id, subject, turns, entities in conn.execute(FACTS, (tenant,)):
            key = entity_key(subject) if subject else None
            fact = Fact(key, turn_ids(turns), frozenset(entities) | ({key} if key else set()))
            facts[fact_id] = fact
            for turn in fact.turns:
                by_turn[turn].append(fact)
            for entity in fact.entities:
                links[entity] += 1
    return Conversation(facts, dict(by_turn), dict(links))


def session_of(turn: str) -> str:
    return turn.split(":")[0]


def number_of(turn: str) -> int:
    return int(turn.split(":")[1])


def distance(turn: str, held: set[str]) -> int | None:
    """Turns between ``turn`` and the nearest held turn of its session (None: none held)."""
    same = [number_of(t) for t in held if session_of(t) == session_of(turn)]
    return min(abs(number_of(turn) - n) for n in same) if same else None


def relations(
    question: Question, hits: Sequence[SearchHit], talk: Conversation, hub: int
) -> list[dict[str, Any]]:
    """One row per evidence turn no candidate covers."""
    held = [turn_ids(hit.source_turn_ids) for hit in hits]
    covered: set[str] = set().union(*held) if held else set()
    seeds: set[str] = set().union(*held[:SEEDS]) if held else set()
    hit_facts = [talk.facts[hit.id] for hit in hits if hit.kind == "fact" and hit.id in talk.facts]
    seed_facts = [
        talk.facts[hit.id] for hit in hits[:SEEDS] if hit.kind == "fact" and hit.id in talk.facts
    ]
    entities = frozenset().union(*(f.entities for f in hit_facts)) if hit_facts else frozenset()
    seed_entities = (
        frozenset().union(*(f.entities for f in seed_facts)) if seed_facts else frozenset()
    )
    subjects = {f.subject for f in hit_facts if f.subject}
    hubs = talk.hubs(hub)
    named = set(query_candidates(question.question)) & set(talk.links)
    rows = []
    for turn in sorted(question.evidence - covered):
        own = talk.by_turn.get(turn, [])
        mine = frozenset().union(*(f.entities for f in own)) if own else frozenset()
        rows.append(
            {
                "turn": turn,
                "distance": distance(turn, covered),
                "seed_distance": distance(turn, seeds),
                "has_fact": bool(own),
                "shares_entity": bool(mine & entities),
                "shares_entity_no_hub": bool((mine & entities) - hubs),
                "shares_seed_entity_no_hub": bool((mine & seed_entities) - hubs),
                "same_subject": any(f.subject in subjects for f in own),
                "names_question_entity": bool(mine & named),
                "names_question_entity_no_hub": bool((mine & named) - hubs),
            }
        )
    return rows


def share(rows: Sequence[dict[str, Any]], test: Any) -> float | None:
    return round(sum(1 for row in rows if test(row)) / len(rows), 3) if rows else None


def near(key: str, most: int) -> Any:
    return lambda row: row[key] is not None and row[key] <= most


COLUMNS: tuple[tuple[str, Any], ...] = (
    ("same session", lambda row: row["distance"] is not None),
    *((name, near("distance", most)) for name, most in DISTANCES),
    ("seed: same session", lambda row: row["seed_distance"] is not None),
    ("seed: <= 2 turns", near("seed_distance", 2)),
    ("has a fact", lambda row: row["has_fact"]),
    ("entity of a candidate fact", lambda row: row["shares_entity"]),
    ("that entity no hub", lambda row: row["shares_entity_no_hub"]),
    ("entity of a seed fact, no hub", lambda row: row["shares_seed_entity_no_hub"]),
    ("subject of a candidate fact", lambda row: row["same_subject"]),
    ("names a question entity", lambda row: row["names_question_entity"]),
    ("question entity no hub", lambda row: row["names_question_entity_no_hub"]),
)


def tabulate(rows_by: dict[tuple[str, str], list[dict[str, Any]]]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for (half, category), rows in rows_by.items():
        entry = {"missing_turns": len(rows)}
        entry |= {name: share(rows, test) for name, test in COLUMNS}
        table.setdefault(half, {})[category] = entry
    return table


def main() -> None:
    parser = locomo_parser(__doc__, Path("benchmarks/results/locomo_reach.json"))
    parser.add_argument("--smoke", action="store_true", help="two sessions of one conversation")
    parser.add_argument("--hub", type=int, default=HUB, help="entities on more facts are hubs")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    args = parser.parse_args()
    started = time.perf_counter()
    data = read_dataset(args.dataset, args.limit, args.smoke)
    questions = [q for q in data.questions if q.category in SCORED and q.evidence]
    halves = split_halves(data.tenants)
    rows_by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    per_question: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="elephant-reach-") as tmp:
        data_dir = args.data_dir or Path(tmp) / "db"
        data_dir.mkdir(parents=True, exist_ok=True)
        overrides = setting_overrides(args.set)
        settings = Settings.model_validate(
            {"data_dir": str(data_dir), "log": {"level": "WARNING"}, **overrides}
        )
        elephant = Elephant.open(settings, use_llm_from_settings=False)
        try:
            ensure_ingested(elephant, data.items, data.tenants)
            talks = {tenant: load_conversation(elephant, tenant) for tenant in data.tenants}
            for question in questions:
                hits = candidate_hits(elephant, question)
                rows = relations(question, hits, talks[question.tenant], args.hub)
                if rows:
                    per_question[question.key] = rows
                for half, members in halves.items():
                    if question.tenant in members:
                        for category in (CATEGORIES[question.category], "overall"):
                            rows_by[(half, category)].extend(rows)
        finally:
            elephant.close()
    table = tabulate(rows_by)
    write_result(
        args.out,
        {
            "smoke": args.smoke,
            "hub": args.hub,
            "seeds": SEEDS,
            "overrides": args.set,
            "table": table,
            "missing": per_question,
            "runtime_s": round(time.perf_counter() - started, 1),
        },
    )
    names = [name for name, _ in COLUMNS]
    rows = [
        [half, category, entry["missing_turns"], *(entry[name] for name in names)]
        for half, categories in table.items()
        for category, entry in categories.items()
    ]
    print(f"\n## Evidence turns no candidate covers, by relation (hubs: > {args.hub} facts)\n")
    print(markdown(["conversations", "category", "missing turns", *names], rows))
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
