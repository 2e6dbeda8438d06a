"""An experiment, not a product feature: topic units that span sessions, on LoCoMo.

    .venv/bin/python benchmarks/locomo_topics.py --data-dir DIR [--mode vectors|words]
        [--out benchmarks/results/locomo_topics.json] [--smoke]

Issue 31 asked whether summaries spanning sessions (one per subject and topic) help
questions whose evidence is spread over several memories. This builds such units
offline from the extracted facts and measures fused search with them: the units are
written into DIR's database as notes (source ``topic-experiment``) whose source turns
are their facts', and deleted again when the run ends (or at the next run's start, if
it was killed).

- ``vectors``: a subject's facts in time order, each joining the nearest topic whose
  centroid is within cosine 0.55, else starting one; topics spanning >= 2 sessions
  become units of their 12 facts nearest the centroid.
- ``words``: a subject's facts sharing a word (>= 4 letters, not a stop word, in at
  most 5 % of its facts), >= 3 facts over >= 2 sessions; a unit per word, 10 facts.

Reported beside the same search without the units, on each half of the split:
recall@1/@10, all-evidence@10 (multi-hop too) and the tokens to cover all evidence.
Measured 2026-12-03 (docs/benchmarks.md): neither mode wins on both halves.
"""

from __future__ import annotations

import hashlib
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ is not installed

from app.config import Settings
from app.services.runtime import Elephant
from benchmarks.locomo import (
    PASSES,
    SCORED,
    ensure_ingested,
    locomo_parser,
    read_dataset,
    run_pass,
    split_halves,
    summarise,
    two_level_table,
    write_result,
)

SOURCE = "topic-experiment"  # the units' source: removed again at the end of a run
SIMILARITY = 0.55
VECTOR_CAP = 12
WORD_CAP = 10
WORD_SHARE = 0.05
_WORD = re.compile(r"[a-z][a-z'-]+")
_STOP_WORDS = (
    "a an the and or but if of to in on at for with from by about as is are was were be "
    "been being have has had do does did i you he she it we they me him her us them my "
    "your his its our their this that these those there here what when where who why how "
    "which not no so very just really also too can could would should will may might must "
    "said says say tells told think feel felt like likes liked love loves loved get gets "
    "got go goes went going make makes made new one two lot lots thing things time way "
    "good great awesome amazing fun cool nice glad happy much more most some any all every "
    "other others recently week weeks month months year years day days today yesterday "
    "last next first still even ever always never out up down over into than then now "
    "well back"
)
_STOP = frozenset(_STOP_WORDS.split())

Fact = tuple[str, list[str], np.ndarray]  # text, source turns, unit vector


def stem(word: str) -> str:
    word = word.strip("'-")
    for suffix, replacement in (("'s", ""), ("ies", "y"), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + replacement
    return word


def sessions(facts: Sequence[Fact], members: Sequence[int]) -> set[str]:
    return {turn.split(":")[0] for index in members for turn in facts[index][1]}


def vector_topics(subject: str, facts: list[Fact]) -> list[tuple[str, list[int]]]:
    centroids: list[np.ndarray] = []
    members: list[list[int]] = []
    for index, (_, _, vector) in enumerate(facts):
        if centroids:
            similarities = np.stack(centroids) @ vector
            best = int(np.argmax(similarities))
            if similarities[best] >= SIMILARITY:
                members[best].append(index)
                mean = np.stack([facts[i][2] for i in members[best]]).mean(axis=0)
                centroids[best] = mean / np.linalg.norm(mean)
                continue
        centroids.append(vector)
        members.append([index])
    units = []
    for centroid, group in zip(centroids, members, strict=True):
        if len(sessions(facts, group)) >= 2:
            nearest = sorted(group, key=lambda i: -float(facts[i][2] @ centroid))[:VECTOR_CAP]
            units.append((subject, sorted(nearest)))
    return units


def word_topics(subject: str, facts: list[Fact]) -> list[tuple[str, list[int]]]:
    own = {stem(word) for word in subject.lower().split()}
    by_word: dict[str, list[int]] = defaultdict(list)
    for index, (text, _, _) in enumerate(facts):
        words = {stem(w) for w in _WORD.findall(text.lower())} - _STOP - own
        for word in words:
            if len(word) >= 4:
                by_word[word].append(index)
    units = []
    for word, group in by_word.items():
        common = len(group) > WORD_SHARE * len(facts)
        if len(group) >= 3 and not common and len(sessions(facts, group)) >= 2:
            units.append((f"{subject} and {word}", group[:WORD_CAP]))
    return units


def write_units(elephant: Elephant, tenants: Sequence[str], mode: str) -> int:
    """The topic units of every tenant, as notes in the (copied) database."""
    written = 0
    for tenant in tenants:
        with elephant.db.tenant(tenant) as conn:
            rows = conn.execute(
                "SELECT subject, text, source_turn_ids, embedding FROM facts "
                "WHERE status = 'active' AND fact_type <> 'preference' "
                "AND subject IS NOT NULL AND embedding IS NOT NULL "
                "ORDER BY valid_from NULLS LAST, created_at"
            ).fetchall()
            by_subject: dict[str, list[Fact]] = defaultdict(list)
            for subject, text, turns, embedding in rows:
                vector = np.asarray(embedding.to_numpy(), dtype=np.float64)  # pgvector
                by_subject[subject].append((text, list(turns), vector / np.linalg.norm(vector)))
            units: list[tuple[str, list[str]]] = []
            for subject, facts in by_subject.items():
                topics = vector_topics if mode == "vectors" else word_topics
                for title, group in topics(subject, facts):
                    text = f"{title}: " + " ".join(facts[i][0].rstrip(".") + "." for i in group)
                    units.append((text, sorted({t for i in group for t in facts[i][1]})))
            if not units:
                continue
            vectors = elephant.embedder.embed_documents([text for text, _ in units])
            for (text, turns), vector in zip(units, vectors, strict=True):
                conn.execute(
                    "INSERT INTO memories (tenant_id, kind, text, embedding, source, "
                    "source_turn_ids, content_hash) VALUES (%s, 'note', %s, %s, %s, %s, %s) "
                    "ON CONFLICT DO NOTHING",
                    (tenant, text, vector, SOURCE, turns, digest(text)),
                )
            written += len(units)
    return written


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def remove_units(elephant: Elephant, tenants: Sequence[str]) -> None:
    for tenant in tenants:
        with elephant.db.tenant(tenant) as conn:
            conn.execute("DELETE FROM memories WHERE kind = 'note' AND source = %s", (SOURCE,))


def measure(elephant: Elephant, questions: Sequence[Any], tenants: Sequence[str]) -> dict[str, Any]:
    outcomes = run_pass(elephant, questions, PASSES[0])
    report = {}
    for half, members in split_halves(tenants).items():
        mine = [o for o in outcomes if o.question.tenant in members]
        report[half] = summarise(mine)
        report[half]["multi-hop all_evidence@10"] = summarise(
            [o for o in mine if o.question.category == 1]
        )["all_evidence@10"]
    return report


def main() -> None:
    parser = locomo_parser(__doc__, Path("benchmarks/results/locomo_topics.json"))
    parser.add_argument("--mode", choices=("vectors", "words"), default="vectors")
    parser.add_argument("--smoke", action="store_true", help="two sessions of one conversation")
    args = parser.parse_args()
    started = time.perf_counter()
    data = read_dataset(args.dataset, args.limit, args.smoke)
    questions, tenants, items = data.questions, data.tenants, data.items
    questions = [q for q in questions if q.category in SCORED]
    with tempfile.TemporaryDirectory(prefix="elephant-topics-") as tmp:
        data_dir = args.data_dir or Path(tmp) / "db"
        data_dir.mkdir(parents=True, exist_ok=True)
        reports: dict[str, Any] = {}
        settings = Settings.model_validate({"data_dir": str(data_dir), "log": {"level": "WARNING"}})
        elephant = Elephant.open(settings, use_llm_from_settings=False)
        try:
            ensure_ingested(elephant, items, tenants)
            remove_units(elephant, tenants)  # a run killed before its cleanup
            reports["without units"] = measure(elephant, questions, tenants)
            units = write_units(elephant, tenants, args.mode)
            reports[f"with {units} {args.mode} units"] = measure(elephant, questions, tenants)
        finally:
            remove_units(elephant, tenants)
            elephant.close()
    result = {
        "smoke": args.smoke,
        "mode": args.mode,
        "units": units,
        "reports": reports,
        "runtime_s": round(time.perf_counter() - started, 1),
    }
    write_result(args.out, result)
    columns = ["recall@1", "recall@10", "all_evidence@10", "multi-hop all_evidence@10"]
    columns.append("cover_tokens_p50")
    print(f"\n## Fused search with topic units ({args.mode}) and without\n")
    print(two_level_table(reports, ["database", "conversations"], columns))
    print(f"\nwritten to {args.out}; total runtime {result['runtime_s']}s")


if __name__ == "__main__":
    main()
