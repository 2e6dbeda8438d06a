"""Near-duplicate dedup on a labelled set: which pairs does a commit merge?

    .venv/bin/python benchmarks/dedup.py [--smoke] [--seed 12] [--out results/dedup.json]

The set is generated here from templates with a fixed seed (nothing is downloaded):
"update" pairs say something else and must both be kept (numbers, ports, money,
dates, weekdays and times, negation, names, identifiers, versions, quantities and
units, swapped words, swapped roles, added details, updates told in other words);
"paraphrase" pairs reword the same statement and "repeat" pairs change only
punctuation, case or spacing: both should merge. The set was written together with
the rule, so read its numbers as a regression check, not as an unbiased estimate.
Every text is embedded with the real default embedder (MiniLM) and each pair goes
through `app.services.memory.dedup.screen`, the function `/commit` calls, with the default
`dedup.*` settings; the old rule (cosine and token Jaccard alone) is
`app.services.memory.dedup.close_enough`. Precision, recall and F1 are of "merge":
precision is how many merges were right (a wrong merge swallows an update), recall
how many of the pairs that should merge did. `--smoke` runs two pairs per category.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from app.config import EmbeddingSettings, Settings
from app.providers.embedder import LocalEmbedder
from app.services.memory.dedup import close_enough, describe, differences, screen

PEOPLE = [
    "Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy",
    "Mallory", "Niaj", "Olivia", "Peggy", "Rupert", "Sybil", "Trent", "Victor", "Wendy",
    "Yusuf",
]  # fmt: skip
CITIES = [
    "Berlin", "Lisbon", "Osaka", "Denver", "Nairobi", "Oslo", "Lima", "Hanoi", "Porto",
    "Dublin", "Seoul", "Quito",
]  # fmt: skip
ORGS = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Tyrell", "Soylent"]
SERVICES = ["billing", "search", "auth", "ingest", "payments", "reporting", "gateway"]
TEAMS = ["platform", "design", "mobile", "data", "security", "growth"]
FOODS = ["peanuts", "shellfish", "gluten", "dairy", "eggs", "sesame"]
MONTHS = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
]  # fmt: skip
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
TIMES = ["9am", "10am", "11:30am", "1pm", "3pm", "4:30pm"]
LIBS = ["Postgres", "Python", "Node", "Redis", "Kafka", "Django"]
PROJECTS = ["Kite", "Falcon", "Orion", "Maple", "Zephyr"]
PORTS = [80, 443, 3000, 5000, 5432, 6379, 8000, 8080, 8443, 9090]
COLOURS = ["blue", "green", "red", "yellow", "orange", "purple"]
DRINKS = ["tea", "coffee", "lemonade", "cola", "cocoa"]
MODES = ["bike", "train", "bus", "car", "ferry"]
JOBS = ["an engineer", "a designer", "an accountant", "a nurse", "a teacher", "a lawyer"]
THINGS = ["laptop", "bicycle", "camera", "sofa", "guitar"]
PETS = ["Max", "Luna", "Bella", "Milo", "Rocky"]


@dataclass(frozen=True)
class Pair:
    category: str
    stored: str
    candidate: str
    merge: bool  # the label: True = same information (merge), False = keep both


Template = Callable[[random.Random], tuple[str, str]]


def _two(rng: random.Random, pool: list[Any]) -> tuple[Any, Any]:
    first, second = rng.sample(pool, 2)
    return first, second


def _swap(rng: random.Random, pair: tuple[str, str]) -> tuple[str, str]:
    """Either text may be the one already stored."""
    return pair if rng.random() < 0.5 else (pair[1], pair[0])


# ------------------------------------------------------------------ updates (keep both)


def _number(rng: random.Random) -> tuple[str, str]:
    p, org, city, team = rng.choice(PEOPLE), rng.choice(ORGS), rng.choice(CITIES), rng.choice(TEAMS)
    a, b = _two(rng, list(range(2, 40)))
    return rng.choice(
        [
            (f"{p} has {a} cats at home.", f"{p} has {b} cats at home."),
            (
                f"{org} has {a * 10} employees in {city}.",
                f"{org} has {b * 10} employees in {city}.",
            ),
            (
                f"The {team} team closed {a} tickets this sprint.",
                f"The {team} team closed {b} tickets this sprint.",
            ),
            (
                f"{p}'s flat is on floor {a} of the building.",
                f"{p}'s flat is on floor {b} of the building.",
            ),
        ]
    )


def _port(rng: random.Random) -> tuple[str, str]:
    svc, org = rng.choice(SERVICES), rng.choice(ORGS)
    a, b = _two(rng, PORTS)
    return rng.choice(
        [
            (
                f"The {svc} server for {org} runs on port {a}.",
                f"The {svc} server for {org} runs on port {b}.",
            ),
            (
                f"{org}'s {svc} API listens on port {a} in staging.",
                f"{org}'s {svc} API listens on port {b} in staging.",
            ),
        ]
    )


def _money(rng: random.Random) -> tuple[str, str]:
    p, org, city = rng.choice(PEOPLE), rng.choice(ORGS), rng.choice(CITIES)
    a, b = _two(rng, [40_000, 50_000, 65_000, 90_000, 120_000])
    x, y = _two(rng, [450, 700, 900, 1200, 1500])
    thing = rng.choice(THINGS)
    return rng.choice(
        [
            (
                f"{p}'s salary at {org} is {a} dollars a year.",
                f"{p}'s salary at {org} is {b} dollars a year.",
            ),
            (f"{p}'s salary at {org} is ${a:,}.", f"{p}'s salary at {org} is ${b:,}."),
            (
                f"Rent for {p}'s flat in {city} is £{x} a month.",
                f"Rent for {p}'s flat in {city} is £{y} a month.",
            ),
            (f"The new {thing} cost {p} {x} dollars.", f"The new {thing} cost {p} {x} euros."),
        ]
    )


def _date(rng: random.Random) -> tuple[str, str]:
    p, org, city = rng.choice(PEOPLE), rng.choice(ORGS), rng.choice(CITIES)
    month, year = rng.choice(MONTHS), rng.choice([2021, 2022, 2023, 2024])
    d1, d2 = _two(rng, list(range(1, 29)))
    m1, m2 = _two(rng, MONTHS)
    return rng.choice(
        [
            (
                f"{p} flew to {city} on {d1} {month} {year}.",
                f"{p} flew to {city} on {d2} {month} {year}.",
            ),
            (
                f"The contract with {org} ends on {year}-{MONTHS.index(m1) + 1:02d}-{d1:02d}.",
                f"The contract with {org} ends on {year}-{MONTHS.index(m2) + 1:02d}-{d1:02d}.",
            ),
            (f"{p}'s birthday is on {m1} {d1}.", f"{p}'s birthday is on {m2} {d1}."),
            (
                f"{p} started at {org} in {month} {year}.",
                f"{p} started at {org} in {month} {year + 1}.",
            ),
        ]
    )


def _weekday_time(rng: random.Random) -> tuple[str, str]:
    p, team, svc = rng.choice(PEOPLE), rng.choice(TEAMS), rng.choice(SERVICES)
    w1, w2 = _two(rng, WEEKDAYS)
    t1, t2 = _two(rng, TIMES)
    h1, h2 = _two(rng, list(range(6, 22)))
    return rng.choice(
        [
            (f"The {team} standup is on {w1} at {t1}.", f"The {team} standup is on {w2} at {t1}."),
            (f"The {team} standup is on {w1} at {t1}.", f"The {team} standup is on {w1} at {t2}."),
            (
                f"{p}'s dentist appointment is on {w1} at {t1}.",
                f"{p}'s dentist appointment is on {w2} at {t2}.",
            ),
            (
                f"The {svc} deploy window opens at {h1}:00 UTC.",
                f"The {svc} deploy window opens at {h2}:00 UTC.",
            ),
        ]
    )


def _negation(rng: random.Random) -> tuple[str, str]:
    p, city, food, team = (
        rng.choice(PEOPLE),
        rng.choice(CITIES),
        rng.choice(FOODS),
        rng.choice(TEAMS),
    )
    svc = rng.choice(SERVICES)
    return rng.choice(
        [
            (f"{p} is allergic to {food}.", f"{p} is not allergic to {food}."),
            (f"{p} eats meat.", f"{p} doesn't eat meat."),
            (
                f"{p} will attend the {team} offsite in {city}.",
                f"{p} won't attend the {team} offsite in {city}.",
            ),
            (
                f"The {svc} service supports single sign-on.",
                f"The {svc} service does not support single sign-on.",
            ),
            (f"{p} has been to {city}.", f"{p} has never been to {city}."),
            (f"{p} can drive a car.", f"{p} can't drive a car."),
        ]
    )


def _name(rng: random.Random) -> tuple[str, str]:
    p1, p2 = _two(rng, PEOPLE)
    c1, c2 = _two(rng, CITIES)
    o1, o2 = _two(rng, ORGS)
    team, job = rng.choice(TEAMS), rng.choice(JOBS)
    return rng.choice(
        [
            (f"{p1} leads the {team} team.", f"{p2} leads the {team} team."),
            (f"{p1} moved to {c1} last year.", f"{p1} moved to {c2} last year."),
            (f"{p1} works at {o1} as {job}.", f"{p1} works at {o2} as {job}."),
            (
                f"The {team} offsite will be held in {c1}.",
                f"The {team} offsite will be held in {c2}.",
            ),
        ]
    )


def _identifier(rng: random.Random) -> tuple[str, str]:
    project, org, svc, p = (
        rng.choice(PROJECTS),
        rng.choice(ORGS),
        rng.choice(SERVICES),
        rng.choice(PEOPLE),
    )
    n1, n2 = _two(rng, list(range(1, 10)))
    k1, k2 = _two(rng, list(range(100, 999)))
    u1, u2 = _two(rng, [name.lower() for name in PEOPLE])
    return rng.choice(
        [
            (f"Project {project}{n1} ships next week.", f"Project {project}{n2} ships next week."),
            (
                f"Ticket OPS-{k1} is blocking the release.",
                f"Ticket OPS-{k2} is blocking the release.",
            ),
            (
                f"Send the weekly report to {u1}@{org.lower()}.com.",
                f"Send the weekly report to {u2}@{org.lower()}.com.",
            ),
            (
                f"The {svc} database lives on host db{n1}.{org.lower()}.internal.",
                f"The {svc} database lives on host db{n2}.{org.lower()}.internal.",
            ),
            (f"{p}'s badge number is B{k1}.", f"{p}'s badge number is B{k2}."),
        ]
    )


def _version(rng: random.Random) -> tuple[str, str]:
    org, lib, svc = rng.choice(ORGS), rng.choice(LIBS), rng.choice(SERVICES)
    a, b = _two(rng, list(range(1, 13)))
    major = rng.randint(1, 4)
    return rng.choice(
        [
            (
                f"{org} production runs {lib} {major}.{a}.",
                f"{org} production runs {lib} {major}.{b}.",
            ),
            (
                f"The {svc} service is pinned to v{major}.{a}.3.",
                f"The {svc} service is pinned to v{major}.{b}.3.",
            ),
            (
                f"Upgrade the {svc} client to version {major}.{a}.0 before Friday.",
                f"Upgrade the {svc} client to version {major}.{b}.0 before Friday.",
            ),
        ]
    )


def _quantity(rng: random.Random) -> tuple[str, str]:
    p, svc, org = rng.choice(PEOPLE), rng.choice(SERVICES), rng.choice(ORGS)
    c1, c2 = _two(rng, CITIES)
    a, b = _two(rng, list(range(2, 15)))
    return rng.choice(
        [
            (f"{p} runs {a} km every morning.", f"{p} runs {b} km every morning."),
            (f"{p} runs {a} km every morning.", f"{p} runs {a} miles every morning."),
            (
                f"The flight from {c1} to {c2} takes {a} hours.",
                f"The flight from {c1} to {c2} takes {b} hours.",
            ),
            (f"The trip to {c1} lasts {a} days.", f"The trip to {c1} lasts {a} weeks."),
            (f"The {svc} backup is {a * 10} GB.", f"The {svc} backup is {b * 10} GB."),
            (f"{p} drinks {a} cups of coffee a day.", f"{p} drinks {b} cups of coffee a day."),
            (
                f"Churn at {org} dropped to {a}% last quarter.",
                f"Churn at {org} dropped to {b}% last quarter.",
            ),
        ]
    )


def _words(rng: random.Random) -> tuple[str, str]:
    p, team = rng.choice(PEOPLE), rng.choice(TEAMS)
    col1, col2 = _two(rng, COLOURS)
    d1, d2 = _two(rng, DRINKS)
    m1, m2 = _two(rng, MODES)
    return rng.choice(
        [
            (
                f"The {team} meeting is in the {col1} room.",
                f"The {team} meeting is in the {col2} room.",
            ),
            (f"{p}'s favourite drink is {d1}.", f"{p}'s favourite drink is {d2}."),
            (f"{p} commutes to work by {m1}.", f"{p} commutes to work by {m2}."),
            (f"{p} is a vegetarian.", f"{p} is a vegan."),
        ]
    )


def _role(rng: random.Random) -> tuple[str, str]:
    p1, p2 = _two(rng, PEOPLE)
    d1, d2 = _two(rng, DRINKS)
    n = rng.choice([20, 50, 75, 120])
    return rng.choice(
        [
            (f"{p1} owes {p2} {n} dollars.", f"{p2} owes {p1} {n} dollars."),
            (f"{p1} reports to {p2}.", f"{p2} reports to {p1}."),
            (f"{p1} prefers {d1} over {d2}.", f"{p1} prefers {d2} over {d1}."),
        ]
    )


def _detail(rng: random.Random) -> tuple[str, str]:
    p, pet, city, food = rng.choice(PEOPLE), rng.choice(PETS), rng.choice(CITIES), rng.choice(FOODS)
    other = rng.choice([f for f in FOODS if f != food])
    return rng.choice(
        [
            (
                f"{p} adopted a dog named {pet}.",
                f"{p} adopted a dog named {pet} from the shelter in {city}.",
            ),
            (f"{p} is allergic to {food}.", f"{p} is allergic to {food} and {other}."),
            (f"{p} plays the guitar.", f"{p} plays the guitar and the piano."),
        ]
    )


def _reworded(rng: random.Random) -> tuple[str, str]:
    """Updates told in other words, with no number, date or name to tell them apart:
    the rule's blind spot (only the one-edit check can catch them)."""
    p1, p2 = _two(rng, PEOPLE)
    org, svc, team, lib = (
        rng.choice(ORGS),
        rng.choice(SERVICES),
        rng.choice(TEAMS),
        rng.choice(LIBS),
    )
    city, thing = rng.choice(CITIES), rng.choice(THINGS)
    return rng.choice(
        [
            (f"{p1} works at {org}.", f"{p1} quit the job at {org}."),
            (f"{p1} is married to {p2}.", f"{p1} and {p2} got divorced."),
            (f"The {svc} service is deprecated.", f"The {svc} service is no longer deprecated."),
            (
                f"The bug in the {svc} service is fixed.",
                f"The {svc} service bug has been reopened.",
            ),
            (f"{p1} is a vegetarian.", f"{p1} started eating meat again."),
            (
                f"The {team} team uses {lib} for the queue.",
                f"The {team} team replaced {lib} in the queue.",
            ),
            (f"{p1} owns a {thing}.", f"{p1} sold the {thing}."),
            (f"{p1} is in {city} this week.", f"{p1} left {city} this week."),
        ]
    )


# ------------------------------------------------------------------ same information (merge)


def _paraphrase(rng: random.Random) -> tuple[str, str]:
    p, p2, city, org = rng.choice(PEOPLE), rng.choice(PEOPLE), rng.choice(CITIES), rng.choice(ORGS)
    month, year, day = rng.choice(MONTHS), rng.choice([2021, 2022, 2023, 2024]), rng.randint(1, 28)
    svc, port, team, job = (
        rng.choice(SERVICES),
        rng.choice(PORTS),
        rng.choice(TEAMS),
        rng.choice(JOBS),
    )
    wd, t, n, lib = rng.choice(WEEKDAYS), rng.choice(TIMES), rng.randint(3, 12), rng.choice(LIBS)
    food, project = rng.choice(FOODS), rng.choice(PROJECTS)
    return rng.choice(
        [
            (
                f"{p} moved to {city} in {month} {year}.",
                f"In {month} {year}, {p} relocated to {city}.",
            ),
            (f"{p} works at {org} as {job}.", f"{org} employs {p} as {job}."),
            (f"{p}'s birthday is {day} {month}.", f"{p} celebrates a birthday on {month} {day}."),
            (
                f"The {svc} service for {org} runs on port {port}.",
                f"{org}'s {svc} service listens on port {port}.",
            ),
            (
                f"The {team} standup is on {wd} at {t}.",
                f"The {team} team holds its standup at {t} on {wd}.",
            ),
            (
                f"{org} has {n * 10} employees in {city}.",
                f"In {city}, {org} employs {n * 10} people.",
            ),
            (
                f"{p} flew to {city} on {day} {month} {year}.",
                f"On {month} {day}, {year}, {p} took a flight to {city}.",
            ),
            (f"{p} does not eat meat.", f"{p} never eats meat."),
            (
                f"Project {project}{n % 10} ships next week.",
                f"Next week, project {project}{n % 10} will ship.",
            ),
            (
                f"{p}'s salary at {org} is ${n * 10_000:,}.",
                f"{org} pays {p} a salary of {n * 10_000} dollars.",
            ),
            (f"{p} runs {n} km every morning.", f"Every morning, {p} goes for a {n} km run."),
            (
                f"The {svc} backup is {n * 10} GB.",
                f"The backup of the {svc} service takes up {n * 10} GB.",
            ),
            (f"{p} leads the {team} team.", f"The {team} team is led by {p}."),
            (
                f"{org} production runs {lib} 3.{n}.",
                f"{lib} 3.{n} is what {org} runs in production.",
            ),
            (f"{p} has {n} cousins.", f"{p} has {n} cousins in total."),
            (f"{p} is allergic to {food}.", f"{food.capitalize()} give {p} an allergic reaction."),
            (f"{p} and {p2} got married in {year}.", f"In {year}, {p} married {p2}."),
            (f"{p} can't swim.", f"{p} is not able to swim."),
        ]
    )


def _synonym(rng: random.Random) -> tuple[str, str]:
    """Paraphrases that swap one word in an otherwise identical sentence: the rule cannot
    tell them from an update without a thesaurus, so it keeps them (listed honestly)."""
    p, city, org = rng.choice(PEOPLE), rng.choice(CITIES), rng.choice(ORGS)
    job, thing = rng.choice(JOBS), rng.choice(THINGS)
    return rng.choice(
        [
            (f"{p} bought a new {thing} last week.", f"{p} purchased a new {thing} last week."),
            (f"{p} lives in {city} now.", f"{p} resides in {city} now."),
            (f"{p} works at {org} as {job}.", f"{p} is employed at {org} as {job}."),
            (f"{p} moved to {city} in 2022.", f"{p} relocated to {city} in 2022."),
        ]
    )


_UPDATES: dict[str, Template] = {
    "number": _number,
    "port": _port,
    "money": _money,
    "date": _date,
    "weekday/time": _weekday_time,
    "negation": _negation,
    "name": _name,
    "identifier": _identifier,
    "version": _version,
    "quantity/unit": _quantity,
    "swapped word": _words,
    "swapped roles": _role,
    "added detail": _detail,
    "reworded update": _reworded,
}
_SAME: dict[str, Template] = {"paraphrase": _paraphrase, "synonym swap": _synonym}


def _repeat(text: str, rng: random.Random) -> str:
    """The same text with punctuation, case or spacing changed."""
    edits: list[Callable[[str], str]] = [
        lambda s: s.rstrip(".") + "!",
        lambda s: s.rstrip("."),
        lambda s: s.replace(" ", "  ", 2),
        lambda s: "  " + s + "\n",
        lambda s: s.replace("'", "\u2019"),
        lambda s: s[0].lower() + s[1:],
        lambda s: s.rstrip(".") + "...",
        lambda s: s.replace(" is ", " is, ", 1) if " is " in s else s + " .",
    ]
    return rng.choice(edits)(text)


def labelled_pairs(seed: int = 12, per_category: int = 16) -> list[Pair]:
    """The labelled set, the same for a seed: updates, paraphrases and repeats."""
    rng = random.Random(seed)
    pairs: dict[tuple[str, str], Pair] = {}

    def add(category: str, stored: str, candidate: str, merge: bool) -> None:
        if stored != candidate:
            pairs.setdefault((stored, candidate), Pair(category, stored, candidate, merge))

    for category, template in _UPDATES.items():
        for _ in range(per_category):
            add(category, *_swap(rng, template(rng)), merge=False)
    for _ in range(per_category * 5):
        add("paraphrase", *_swap(rng, _paraphrase(rng)), merge=True)
    for _ in range(per_category // 2):
        add("synonym swap", *_swap(rng, _synonym(rng)), merge=True)
    sources = [template(rng)[0] for template in [*_UPDATES.values(), *_SAME.values()] * 3]
    for text in sources:
        add("repeat", text, _repeat(text, rng), merge=True)
    return list(pairs.values())


def smoke_pairs(pairs: list[Pair], per_category: int = 2) -> list[Pair]:
    taken: dict[str, int] = {}
    chosen = []
    for pair in pairs:
        if taken.get(pair.category, 0) < per_category:
            taken[pair.category] = taken.get(pair.category, 0) + 1
            chosen.append(pair)
    return chosen


# ------------------------------------------------------------------ measuring


def scores(truth: list[bool], predicted: list[bool]) -> dict[str, float | int]:
    """Precision, recall and F1 of "merge"."""
    tp = sum(t and p for t, p in zip(truth, predicted, strict=True))
    fp = sum(p and not t for t, p in zip(truth, predicted, strict=True))
    fn = sum(t and not p for t, p in zip(truth, predicted, strict=True))
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "f1": round(f1, 3),
        "merged": tp + fp,
        "wrong_merges": fp,
        "missed_merges": fn,
    }


def _by_category(
    pairs: list[Pair], old: list[bool], new: list[bool]
) -> Iterator[tuple[str, dict[str, Any]]]:
    for category in dict.fromkeys(pair.category for pair in pairs):
        index = [i for i, pair in enumerate(pairs) if pair.category == category]
        yield (
            category,
            {
                "pairs": len(index),
                "label": "merge" if pairs[index[0]].merge else "keep",
                "old_merged": sum(old[i] for i in index),
                "new_merged": sum(new[i] for i in index),
            },
        )


def _why(pair: Pair, cosine: float, close: bool) -> str:
    if not close:
        return "not close by cosine and Jaccard"
    return describe(differences(pair.stored, pair.candidate)) or "same information"


def run(pairs: list[Pair]) -> dict[str, Any]:
    rules = Settings().dedup
    started = time.perf_counter()
    embedder = LocalEmbedder(EmbeddingSettings())
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    vectors = embedder.embed_documents(
        [pair.stored for pair in pairs] + [pair.candidate for pair in pairs]
    )
    embed_s = time.perf_counter() - started
    cosines = [float(vectors[i] @ vectors[len(pairs) + i]) for i in range(len(pairs))]
    started = time.perf_counter()
    old = [
        close_enough(c, p.stored, p.candidate, rules) for c, p in zip(cosines, pairs, strict=True)
    ]
    new = [
        screen(p.candidate, [("stored", p.stored, c)], rules).duplicate is not None
        for c, p in zip(cosines, pairs, strict=True)
    ]
    rule_ms = (time.perf_counter() - started) * 1000 / len(pairs)
    truth = [pair.merge for pair in pairs]
    wrong = [
        {
            **asdict(pair),
            "cosine": round(cosine, 3),
            "merged": merged,
            "why": _why(pair, cosine, close),
        }
        for pair, cosine, merged, close in zip(pairs, cosines, new, old, strict=True)
        if merged != pair.merge
    ]
    return {
        "pairs": len(pairs),
        "should_merge": sum(truth),
        "should_keep": len(truth) - sum(truth),
        "settings": rules.model_dump(),
        "old_rule": scores(truth, old),
        "new_rule": scores(truth, new),
        "categories": dict(_by_category(pairs, old, new)),
        "misclassified": wrong,
        "timing": {
            "model_load_s": round(load_s, 2),
            "embed_s": round(embed_s, 2),
            "rule_ms_per_pair": round(rule_ms, 3),
        },
    }


def report(results: dict[str, Any]) -> None:
    print(
        f"{results['pairs']} pairs: {results['should_merge']} should merge, "
        f"{results['should_keep']} must be kept"
    )
    print(f"{'rule':<34} {'precision':>9} {'recall':>7} {'F1':>6} {'merged':>7} {'wrong':>6}")
    for label, key in (
        ("old (cosine + Jaccard)", "old_rule"),
        ("new (+ same information)", "new_rule"),
    ):
        got = results[key]
        print(
            f"{label:<34} {got['precision']:>9.3f} {got['recall']:>7.3f} {got['f1']:>6.3f}"
            f" {got['merged']:>7} {got['wrong_merges']:>6}"
        )
    print(f"\n{'category':<16} {'label':>5} {'pairs':>5} {'old merged':>10} {'new merged':>10}")
    for category, row in results["categories"].items():
        print(
            f"{category:<16} {row['label']:>5} {row['pairs']:>5} {row['old_merged']:>10}"
            f" {row['new_merged']:>10}"
        )
    print(f"\nmisclassified by the new rule ({len(results['misclassified'])}):")
    for item in results["misclassified"]:
        verdict = "merged" if item["merged"] else "kept"
        print(
            f"  [{item['category']}] {verdict} at cosine {item['cosine']}: "
            f"{item['stored']!r} | {item['candidate']!r} ({item['why']})"
        )
    timing = results["timing"]
    print(f"\nembedding {timing['embed_s']} s; the rule {timing['rule_ms_per_pair']} ms per pair")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--smoke", action="store_true", help="two pairs per category")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/dedup.json"))
    args = parser.parse_args()
    pairs = labelled_pairs(args.seed)
    if args.smoke:
        pairs = smoke_pairs(pairs)
    results = run(pairs)
    report(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"smoke": args.smoke, **results}, indent=2))


if __name__ == "__main__":
    main()
