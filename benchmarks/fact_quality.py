"""Offline fact quality on a hand-labelled sample: how many extracted facts are right?

    .venv/bin/python benchmarks/fact_quality.py [--smoke] [--out results/fact_quality.json]

The sample (tests/data/fact_sample.json) is synthetic text written for this: friends
chatting in the first person with relative dates, notes, and long assistant answers
in markdown (headings, bullets, numbered steps, a code block, tables, links). Each
turn lists the facts a careful human would keep from it, possibly none.
`extract_offline` runs over every conversation with the default `facts.*` settings
(each note on its own, as a note is extracted), and each extracted fact is matched
against the gold facts of its source turns.

Matching rule: the content words of both sentences (`content_words`, lower-cased,
a plural "s" dropped) have a Jaccard overlap of at least 0.5. Matching is one to
one, best overlap first, so a second fact for the same gold fact counts as a
duplicate, not as correct. Precision = matched facts / extracted facts; recall =
matched gold facts / gold facts. The sample was written together with the rules,
so read its numbers as a regression check, not as an unbiased estimate.
`--smoke` runs the first two conversations.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from app.config import Settings
from app.services.facts.model import ExtractedFact, TurnInput
from app.services.facts.offline.extract import extract_offline
from app.services.facts.offline.lexicon import content_words

SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "data" / "fact_sample.json"
MATCH_JACCARD = 0.5

Extractor = Callable[[Sequence[TurnInput], datetime | None], list[ExtractedFact]]


@dataclass(frozen=True)
class Turn:
    conversation: str
    id: str
    speaker: str | None
    text: str
    gold: list[str]
    assistant: bool


def load_sample(path: Path = SAMPLE) -> list[dict[str, Any]]:
    conversations: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))[
        "conversations"
    ]
    return conversations


def words(text: str) -> frozenset[str]:
    """The matching vocabulary of a sentence: content words, a plural "s" dropped."""
    found = set()
    for word in content_words(text):
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        found.add(word)
    return frozenset(found)


def jaccard(a: str, b: str) -> float:
    left, right = words(a), words(b)
    if not left or not right:
        return 0.0
    return len(left & right) / len(left | right)


def default_extractor() -> Extractor:
    facts = Settings().facts

    def extract(turns: Sequence[TurnInput], session: datetime | None) -> list[ExtractedFact]:
        return extract_offline(
            turns,
            session,
            assistant_speakers=facts.assistant_speakers,
            from_assistant=facts.from_assistant,
        )

    return extract


def _extract_all(
    conversations: list[dict[str, Any]], extract: Extractor, assistants: frozenset[str]
) -> tuple[list[Turn], list[tuple[ExtractedFact, list[str]]]]:
    """Every turn, and every fact with the ids of the turns it came from."""
    turns: list[Turn] = []
    facts: list[tuple[ExtractedFact, list[str]]] = []
    for conv in conversations:
        inputs = []
        for raw in conv["turns"]:
            speaker = raw.get("speaker")
            stamp = raw.get("timestamp")
            inputs.append(
                TurnInput(
                    speaker,
                    raw["text"],
                    datetime.fromisoformat(stamp) if stamp else None,
                    None if conv.get("notes") else raw["id"],
                    raw.get("author"),
                )
            )
            turns.append(
                Turn(
                    conv["id"],
                    raw["id"],
                    speaker,
                    raw["text"],
                    list(raw["gold"]),
                    bool(speaker) and speaker.lower() in assistants,
                )
            )
        session = conv.get("session_date")
        anchor = datetime.fromisoformat(session) if session else None
        if conv.get("notes"):  # a note is extracted on its own, and cites no turn
            for raw, turn in zip(conv["turns"], inputs, strict=True):
                facts.extend((fact, [raw["id"]]) for fact in extract([turn], anchor))
        else:
            facts.extend((fact, list(fact.source_turn_ids)) for fact in extract(inputs, anchor))
    return turns, facts


def _match(
    turns: list[Turn], facts: list[tuple[ExtractedFact, list[str]]]
) -> tuple[dict[int, tuple[str, str, float]], set[tuple[str, int]]]:
    """One-to-one matches, best overlap first: fact index -> (turn id, gold, score)."""
    by_id = {turn.id: turn for turn in turns}
    pairs = []
    for index, (fact, ids) in enumerate(facts):
        for turn_id in ids:
            for g, gold in enumerate(by_id[turn_id].gold):
                score = jaccard(fact.text, gold)
                if score >= MATCH_JACCARD:
                    pairs.append((score, index, turn_id, g, gold))
    pairs.sort(key=lambda p: (-p[0], p[1], p[2], p[3]))
    matched: dict[int, tuple[str, str, float]] = {}
    used: set[tuple[str, int]] = set()
    for score, index, turn_id, g, gold in pairs:
        if index in matched or (turn_id, g) in used:
            continue
        matched[index] = (turn_id, gold, round(score, 3))
        used.add((turn_id, g))
    return matched, used


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def run(conversations: list[dict[str, Any]], extract: Extractor | None = None) -> dict[str, Any]:
    """Precision, recall, facts per turn and the wrong facts, overall and per turn kind."""
    assistants = frozenset(Settings().facts.assistant_speakers)
    started = time.perf_counter()
    turns, facts = _extract_all(conversations, extract or default_extractor(), assistants)
    extract_ms = (time.perf_counter() - started) * 1000
    matched, used = _match(turns, facts)
    by_id = {turn.id: turn for turn in turns}

    def kind(turn: Turn) -> str:
        return "assistant" if turn.assistant else ("note" if turn.speaker is None else "chat")

    def fact_kind(ids: list[str]) -> str:
        kinds = {kind(by_id[t]) for t in ids}
        return kinds.pop() if len(kinds) == 1 else "mixed"

    kinds: dict[str, dict[str, Any]] = {}
    for name in ("chat", "assistant", "note"):
        kind_turns = [t for t in turns if kind(t) == name]
        kind_facts = [i for i, (_, ids) in enumerate(facts) if fact_kind(ids) == name]
        gold = sum(len(t.gold) for t in kind_turns)
        found = sum(1 for t in kind_turns for g in range(len(t.gold)) if (t.id, g) in used)
        right = sum(1 for i in kind_facts if i in matched)
        kinds[name] = {
            "turns": len(kind_turns),
            "gold": gold,
            "facts": len(kind_facts),
            "precision": _ratio(right, len(kind_facts)),
            "recall": _ratio(found, gold),
        }
    wrong = []
    for index, (fact, ids) in enumerate(facts):
        if index in matched:
            continue
        best = max(
            ((jaccard(fact.text, g), g) for t in ids for g in by_id[t].gold), default=(0.0, "")
        )
        wrong.append(
            {
                "turns": ids,
                "fact": fact.text,
                "confidence": fact.confidence,
                "said_by_assistant": getattr(fact, "said_by_assistant", None),
                "closest_gold": best[1] or None,
                "overlap": round(best[0], 3),
            }
        )
    missed = [
        {"turn": t.id, "gold": gold}
        for t in turns
        for g, gold in enumerate(t.gold)
        if (t.id, g) not in used
    ]
    assistant_facts = sum(1 for _, ids in facts if ids and all(by_id[t].assistant for t in ids))
    gold_total = sum(len(t.gold) for t in turns)
    return {
        "turns": len(turns),
        "gold": gold_total,
        "facts": len(facts),
        "correct": len(matched),
        "precision": _ratio(len(matched), len(facts)),
        "recall": _ratio(len(used), gold_total),
        "facts_per_turn": _ratio(len(facts), len(turns)),
        "assistant_fact_share": _ratio(assistant_facts, len(facts)),
        "match_rule": f"content-word Jaccard >= {MATCH_JACCARD}, one to one",
        "kinds": kinds,
        "wrong": wrong,
        "missed": missed,
        "extract_ms": round(extract_ms, 2),
    }


def report(results: dict[str, Any]) -> None:
    def shown(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    print(
        f"{results['turns']} turns, {results['gold']} gold facts, {results['facts']} extracted "
        f"({results['facts_per_turn']} per turn, {results['assistant_fact_share']} from the "
        f"assistant) in {results['extract_ms']} ms; match: {results['match_rule']}"
    )
    print(f"{'turns':<10} {'n':>4} {'gold':>5} {'facts':>6} {'precision':>9} {'recall':>7}")
    rows = [("all", results["turns"], results["gold"], results["facts"])]
    values = [(results["precision"], results["recall"])]
    for name, row in results["kinds"].items():
        rows.append((name, row["turns"], row["gold"], row["facts"]))
        values.append((row["precision"], row["recall"]))
    for (name, n, gold, facts), (precision, recall) in zip(rows, values, strict=True):
        print(f"{name:<10} {n:>4} {gold:>5} {facts:>6} {shown(precision):>9} {shown(recall):>7}")
    print(f"\nwrong facts ({len(results['wrong'])}):")
    for item in results["wrong"]:
        print(f"  [{','.join(item['turns'])}] {item['fact']!r} (conf {item['confidence']})")
    print(f"\nmissed gold facts ({len(results['missed'])}):")
    for item in results["missed"]:
        print(f"  [{item['turn']}] {item['gold']!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="the first two conversations")
    parser.add_argument("--sample", type=Path, default=SAMPLE)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/fact_quality.json"))
    args = parser.parse_args()
    conversations = load_sample(args.sample)
    if args.smoke:
        conversations = conversations[:2]
    results = run(conversations)
    report(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"smoke": args.smoke, **results}, indent=2))


if __name__ == "__main__":
    main()
