"""Offline entity quality on hand-labelled LoCoMo turns: are the names we link on names?

    .venv/bin/python benchmarks/entity_quality.py [--dataset ../shared/datasets/locomo10.json]
        [--rules new|old] [--labels FILE] [--out benchmarks/results/entity_quality.json]
        [--print-sample] [--verbose] [--smoke]

The labels (benchmarks/labels/locomo_entities.json) name the entities of 160 LoCoMo
turns by (conversation, turn id): 10 turns per conversation at random and 6 among the
turns that capitalise a word mid-sentence that is no speaker's name. The turns' text is
read from the dataset at run time (it is not ours to commit).

Two measures, each over the same turns:

- links: the entities of the turn's text as memory links see them. ``--rules new``:
  app/services/facts/offline/entities.py (recognise, with the conversation's speakers
  and its capitalisation evidence); ``--rules old``: the rules before issue 41
  (names.find_names per sentence, typed by names.entity_type).
- facts: the entities of the facts extract_offline draws from the turn (the whole
  conversation extracted, session by session), the turn's own speaker left out (a
  first-person fact's subject, not a name in the text). Run it against the code before
  with PYTHONPATH pointing at an export of the older package (see docs/benchmarks.md).

A found entity is right when its key (case-folded) equals one of a label's names; a
name in the labels' "ok" list counts neither way. Precision = right / found; recall =
labels found / labels; typed precision = right with a type the label allows / found.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from app.services.facts.model import TurnInput
from app.services.facts.offline.extract import extract_offline
from app.services.facts.offline.names import entity_type, find_names
from app.services.facts.offline.sentences import clean, split_sentences

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "benchmarks" / "labels" / "locomo_entities.json"
DEFAULT_DATASET = ROOT.parent / "shared" / "datasets" / "locomo10.json"
Found = list[tuple[str, str]]  # (name, type)


def key(name: str) -> str:
    return " ".join(name.casefold().split())


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    sessions: list[tuple[datetime | None, list[dict[str, Any]]]]

    @property
    def turns(self) -> list[dict[str, Any]]:
        return [turn for _, turns in self.sessions for turn in turns]


def load(dataset: Path) -> list[Conversation]:
    conversations = []
    for item in json.loads(dataset.read_text(encoding="utf-8")):
        c = item["conversation"]
        names = sorted(
            (k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])
        )
        sessions = [(_date(c.get(f"{name}_date_time")), c[name]) for name in names]
        conversations.append(
            Conversation(item["sample_id"], (c["speaker_a"], c["speaker_b"]), sessions)
        )
    return conversations


def _date(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.strptime(text, "%I:%M %p on %d %B, %Y")
    except ValueError:
        return None


def old_links(text: str, people: frozenset[str]) -> Found:
    """The rules before issue 41: every capitalised name of each sentence, typed by the
    words before it."""
    found: Found = []
    for sentence in split_sentences(clean(text)):
        for offset, name in find_names(sentence, people):
            found.append((name, entity_type(sentence, offset, name, people)))
    return found


def new_links(conversation: Conversation) -> Callable[[str, frozenset[str]], Found]:
    from app.services.facts.offline.entities import capitalised_evidence, recognise

    evidence = capitalised_evidence(str(t["text"]) for t in conversation.turns)

    def links(text: str, people: frozenset[str]) -> Found:
        return [(m.name, m.type) for m in recognise(text, people, evidence=evidence)]

    return links


def fact_entities(conversation: Conversation) -> dict[str, Found]:
    """Turn id -> entities of the facts drawn from it; a speaker only when the turn names
    them (a first-person fact's subject, or "you" resolved, is no name in the text)."""
    text_of = {str(t["dia_id"]): str(t["text"]) for t in conversation.turns}
    speakers = {key(s) for s in conversation.speakers}
    found: dict[str, Found] = {}
    for when, turns in conversation.sessions:
        inputs = [
            TurnInput(str(t["speaker"]), str(t["text"]), None, str(t["dia_id"])) for t in turns
        ]
        for fact in extract_offline(inputs, when):
            for turn_id in fact.source_turn_ids:
                for entity in fact.entities:
                    said = re.escape(key(entity.name))
                    named = re.search(rf"\b{said}\b", key(text_of.get(turn_id, ""))) is not None
                    if named or key(entity.name) not in speakers:
                        found.setdefault(turn_id, []).append((entity.name, entity.type))
    return found


@dataclass
class Score:
    found: int = 0
    right: int = 0
    typed: int = 0
    labels: int = 0
    recalled: int = 0

    def add(self, found: Found, gold: list[list[str]], ok: frozenset[str]) -> list[str]:
        """Count one turn; returns the wrong names (for the printout)."""
        unique = {key(n): (n, t) for n, t in found if key(n) not in ok}
        open_labels = [
            (frozenset(key(a) for a in n.split("|")), set(t.split("|"))) for n, t in gold
        ]
        self.labels += len(open_labels)
        wrong = []
        for k, (name, kind) in unique.items():
            self.found += 1
            match = next((g for g in open_labels if k in g[0]), None)
            if match is None:
                wrong.append(f"{name} ({kind})")
                continue
            open_labels.remove(match)
            self.right += 1
            self.recalled += 1
            self.typed += kind in match[1]
            if kind not in match[1]:
                wrong.append(f"{name} typed {kind}, not {'|'.join(sorted(match[1]))}")
        return wrong

    def as_dict(self) -> dict[str, float | int]:
        return {
            "found": self.found,
            "labels": self.labels,
            "precision": round(self.right / self.found, 4) if self.found else 0.0,
            "recall": round(self.recalled / self.labels, 4) if self.labels else 0.0,
            "typed_precision": round(self.typed / self.found, 4) if self.found else 0.0,
            "type_accuracy": round(self.typed / self.right, 4) if self.right else 0.0,
        }


def sample(conversations: Iterable[Conversation]) -> dict[str, list[str]]:
    """The labelled turns as drawn (for --print-sample): the random ones, then the named."""
    rng, named_rng = random.Random(41), random.Random(4141)
    picked: dict[str, list[str]] = {}
    for c in conversations:
        turns = c.turns
        speakers = {s.lower() for s in c.speakers}
        chosen = sorted(rng.sample(range(len(turns)), 10))
        picked[c.sample_id] = [str(turns[i]["dia_id"]) for i in chosen]
        pattern = r"(?<![.!?]\s)(?<!^)\b[A-Z][a-zA-Z]+"
        pool = [
            i
            for i, t in enumerate(turns)
            if any(w.lower() not in speakers for w in re.findall(pattern, str(t["text"])))
        ]
        picked[c.sample_id] += [str(turns[i]["dia_id"]) for i in sorted(named_rng.sample(pool, 6))]
    return picked


def run(
    dataset: Path, rules: str, verbose: bool, path: Path = LABELS, smoke: bool = False
) -> dict[str, Any]:
    labels = json.loads(path.read_text(encoding="utf-8"))
    if smoke:  # the first two labelled conversations
        labels["turns"] = dict(list(labels["turns"].items())[:2])
    ok = frozenset(key(n) for n in labels["ok"])
    scores = {"links": Score(), "facts": Score()}
    errors: dict[str, list[str]] = {"links": [], "facts": []}
    for conversation in load(dataset):
        gold_turns = labels["turns"].get(conversation.sample_id, {})
        text_of = {str(t["dia_id"]): str(t["text"]) for t in conversation.turns}
        people = frozenset(s.lower() for s in conversation.speakers)
        links = old_links if rules == "old" else new_links(conversation)
        facts = fact_entities(conversation)
        for turn_id, gold in gold_turns.items():
            for measure, found in (
                ("links", links(text_of[turn_id], people)),
                ("facts", facts.get(turn_id, [])),
            ):
                wrong = scores[measure].add(found, gold, ok)
                errors[measure] += [f"{conversation.sample_id} {turn_id}: {w}" for w in wrong]
    result = {
        "rules": rules,
        "smoke": smoke,
        "labels": str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path),
        "turns": sum(len(v) for v in labels["turns"].values()),
        "dataset": str(dataset),
        **{measure: score.as_dict() for measure, score in scores.items()},
        "wrong": errors,
    }
    if verbose:
        for measure in ("links", "facts"):
            print(f"-- {measure}: wrong")
            for line in errors[measure]:
                print("  ", line)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--rules", choices=("new", "old"), default="new")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/entity_quality.json")
    parser.add_argument("--labels", type=Path, default=LABELS, help="The labels to score on.")
    parser.add_argument("--print-sample", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="The first two conversations.")
    parser.add_argument("--verbose", action="store_true", help="List every wrong entity.")
    args = parser.parse_args()
    if args.print_sample:
        for sample_id, turns in sample(load(args.dataset)).items():
            print(sample_id, " ".join(turns))
        return
    result = run(args.dataset, args.rules, args.verbose, args.labels, args.smoke)
    for measure in ("links", "facts"):
        print(measure, json.dumps(result[measure]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
