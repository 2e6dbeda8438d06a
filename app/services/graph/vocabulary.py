"""The graph's closed vocabulary: entity roles, subject domains, relation types, statuses.

The single source of truth for every adapter (API, MCP, CLI), for the AGE
labels a tenant's graph is provisioned with, and for the relation types the
relational backend accepts (frozen in migration 0008's CHECK: a new type needs a
migration that widens it; tests/integration/test_graph_relational.py compares the lists).
Names are folded before lookup (case, spaces, hyphens and underscores are
equivalent), aliases map to their canonical type, and anything else is
rejected with the list of what is accepted: a write never goes through with a
type we do not know.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from app.errors import InvalidInput

ROLES: tuple[str, ...] = (
    "decision", "concept", "finding", "rule", "open-question", "artifact", "insight",
    "task", "event", "thing", "person", "organization", "place",
)  # fmt: skip

ROLE_ALIASES: Mapping[str, str] = {
    "question": "open-question",
    "open-issue": "open-question",
    "idea": "concept",
    "result": "finding",
    "observation": "finding",
    "policy": "rule",
    "constraint": "rule",
    "file": "artifact",
    "document": "artifact",
    "product": "artifact",
    "lesson": "insight",
    "todo": "task",
    "action-item": "task",
    "object": "thing",
    "item": "thing",
    "entity": "thing",
    "people": "person",
    "human": "person",
    "organisation": "organization",
    "org": "organization",
    "company": "organization",
    "team": "organization",
    "location": "place",
    "city": "place",
    "country": "place",
}

DEFAULT_DOMAINS: tuple[str, ...] = (
    "software", "music", "history", "philosophy", "health", "writing", "neuro",
    "finance", "personal", "general",
)  # fmt: skip

RELATIONS: tuple[str, ...] = (
    "supports", "contradicts", "evolved_into", "depends_on", "exemplifies", "part_of",
    "caused_by", "enables", "supersedes", "related_to", "investigates", "informs", "uses",
    "mentions", "knows", "works_at", "lives_in", "member_of",
)  # fmt: skip

RELATION_ALIASES: Mapping[str, str] = {
    "connected_to": "related_to",
    "relates_to": "related_to",
    "related": "related_to",
    "associated_with": "related_to",
    "aspect_of": "part_of",
    "component_of": "part_of",
    "subset_of": "part_of",
    "requires": "depends_on",
    "needs": "depends_on",
    "depends": "depends_on",
    "backs": "supports",
    "confirms": "supports",
    "refutes": "contradicts",
    "conflicts_with": "contradicts",
    "evolves_into": "evolved_into",
    "became": "evolved_into",
    "example_of": "exemplifies",
    "instance_of": "exemplifies",
    "result_of": "caused_by",
    "allows": "enables",
    "replaces": "supersedes",
    "studies": "investigates",
    "explores": "investigates",
    "influences": "informs",
    "utilizes": "uses",
    "uses_tool": "uses",
    "refers_to": "mentions",
    "mentioned": "mentions",
    "friend_of": "knows",
    "works_for": "works_at",
    "employed_by": "works_at",
    "resides_in": "lives_in",
    "lives_at": "lives_in",
    "belongs_to": "member_of",
}

EPISTEMIC: tuple[str, ...] = ("assertion", "hypothesis", "speculation", "unknown")
DEFAULT_EPISTEMIC = "unknown"

OBSERVATION_KINDS: tuple[str, ...] = ("note", "decided", "rejected", "because", "touches")

_SEPARATORS = re.compile(r"[\s_\-]+")


def fold(value: str) -> str:
    """Case, spaces, hyphens and underscores do not distinguish two type names."""
    return _SEPARATORS.sub("_", value.strip().lower()).strip("_")


def _lookup(value: str, canonical: Iterable[str], aliases: Mapping[str, str], what: str) -> str:
    names = tuple(canonical)
    folded = fold(value)
    by_fold = {fold(name): name for name in names}
    by_fold.update({fold(alias): target for alias, target in aliases.items()})
    found = by_fold.get(folded)
    if found is None:
        alias_hint = ""
        if aliases:
            examples = ", ".join(f"{a} → {t}" for a, t in list(aliases.items())[:6])
            alias_hint = f" (aliases are folded, e.g. {examples})"
        raise InvalidInput(
            f"unknown {what} {value!r}: use one of {', '.join(names)}{alias_hint}",
            details={"field": what.replace(" ", "_"), "valid": list(names)},
        )
    return found


def relation_type(value: str) -> str:
    return _lookup(value, RELATIONS, RELATION_ALIASES, "relation type")


def role(value: str) -> str:
    return _lookup(value, ROLES, ROLE_ALIASES, "entity type")


def domain(value: str, domains: Iterable[str]) -> str:
    return _lookup(value, domains, {}, "domain")


def epistemic(value: str | None) -> str:
    if value is None:
        return DEFAULT_EPISTEMIC
    return _lookup(value, EPISTEMIC, {}, "epistemic status")


def observation_kind(value: str) -> str:
    return _lookup(value, OBSERVATION_KINDS, {}, "observation kind")


def role_for_extracted(type_name: str) -> str:
    """Extractors name types freely; the graph keeps the ones it knows and calls the rest things."""
    try:
        return role(type_name)
    except InvalidInput:
        return "thing"
