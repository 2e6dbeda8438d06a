"""Query expansion: the question, plus variants that help when it names a person.

For "When did Caroline go to the support group?" the variants are the name alone
("Caroline": everything about her) and the question without it ("When did go to
the support group?": the event, whoever it was). Names are the tenant's known
speakers and fact subjects, plus capitalised words that are not sentence starts.
With an LLM configured, paraphrases can be added (app/prompts/paraphrase.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import psycopg

_WORD = re.compile(r"[A-Za-z][\w'-]*")
_POSSESSIVE = re.compile("(?:'|\u2019)s\\b")
_FUNCTION_WORDS = (
    "what when where who whom whose which why how did does do is are was were can could "
    "would should will has have had the a an in on at of for to and or i you we they he she "
    "it my your our their his her its this that these those"
)
QUESTION_WORDS = frozenset(_FUNCTION_WORDS.split())


def names_in(query: str, known: Iterable[str]) -> list[str]:
    """Names the query mentions: known ones first, then capitalised non-initial words."""
    found: list[str] = []
    lowered = query.lower()
    for name in sorted({k for k in known if k}, key=len, reverse=True):
        if re.search(rf"\b{re.escape(name.lower())}\b", lowered) and name not in found:
            found.append(name)
    words = _WORD.findall(query)
    for index, word in enumerate(words):
        bare = _POSSESSIVE.sub("", word)
        if (
            index > 0
            and bare[:1].isupper()
            and bare[1:].islower()  # Title case: a name, not an acronym
            and len(bare) > 2
            and bare.lower() not in QUESTION_WORDS
            and not any(bare.lower() in name.lower().split() for name in found)
        ):
            found.append(bare)
    return found


def without(query: str, name: str) -> str:
    pattern = re.compile(rf"\b{re.escape(name)}(?:(?:'|\u2019)s)?\b", re.IGNORECASE)
    return re.sub(r"\s{2,}", " ", pattern.sub("", query)).strip()


def expand(query: str, known_names: Iterable[str], *, max_variants: int = 5) -> list[str]:
    """The query first, then per named person the name alone and the query without it."""
    variants = [query]
    for name in names_in(query, known_names)[:2]:
        for variant in (name, without(query, name)):
            if len(_WORD.findall(variant)) and variant.lower() not in {v.lower() for v in variants}:
                variants.append(variant)
    return variants[:max_variants]


def keyword_text(query: str) -> str:
    """websearch_to_tsquery text matching any of the words (its default is all of them)."""
    words = [w for w in _WORD.findall(query) if w.lower() not in QUESTION_WORDS]
    return " or ".join(words) if words else query


Connection = psycopg.Connection[tuple[Any, ...]]


def known_names(conn: Connection, tenant: str) -> list[str]:
    """Speakers and the most frequent fact subjects of the tenant: the names worth expanding."""
    rows = conn.execute(
        "(SELECT DISTINCT speaker FROM turns WHERE tenant_id = %(tenant)s) UNION "
        "(SELECT subject FROM facts WHERE tenant_id = %(tenant)s AND subject IS NOT NULL "
        " GROUP BY subject ORDER BY count(*) DESC LIMIT 200)",
        {"tenant": tenant},
    ).fetchall()
    return [str(row[0]) for row in rows]


# What changes the names: a committed conversation (its windows are new memories) or a
# new fact, i.e. the newest created_at of either; two probes of tenant-leading indexes
# (memories_tenant_created, facts_tenant_created) instead of reading every turn and fact
# of the tenant on every expanded search.
_NAMES_STAMP = (
    "SELECT (SELECT max(created_at) FROM memories WHERE tenant_id = %(tenant)s), "
    "(SELECT max(created_at) FROM facts WHERE tenant_id = %(tenant)s)"
)


class NameCache:
    """known_names per tenant, read again when the tenant wrote (or lost) a turn or a fact
    since: the stamp is read from the database, so a write in any process counts."""

    def __init__(self, max_tenants: int = 10_000) -> None:
        self._entries: dict[str, tuple[tuple[Any, ...], list[str]]] = {}
        self._max = max_tenants

    def get(self, conn: Connection, tenant: str) -> list[str]:
        row = conn.execute(_NAMES_STAMP, {"tenant": tenant}).fetchone()
        stamp = tuple(row) if row else ()
        cached = self._entries.get(tenant)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        names = known_names(conn, tenant)
        if len(self._entries) >= self._max:
            self._entries.clear()
        self._entries[tenant] = (stamp, names)
        return names
