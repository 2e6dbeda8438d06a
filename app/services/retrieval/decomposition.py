"""Question decomposition without an LLM: a question about several named people or places
is also searched once per name.

"What subject have Caroline and Melanie both painted?" needs what Caroline painted and
what Melanie painted, often in different conversations; one embedding of the whole
question sits between the two and finds the turns where they talk about painting
together. Its sub-queries, "What subject has Caroline painted?" and "What subject has
Melanie painted?", are searched as query variants in the same statement and fused.

Only a conjunction of capitalised words ("Jon and Gina", "Paris, Rome or Oslo", "both
Jean and John") is split: such words are names, so each sub-query is a question about
one of them. Lower-case lists ("cats and dogs") are left whole: the words' senses bind
each other ("salt and pepper"). Rules only read the question's text, so the sub-queries
are known before the database is, and are embedded while the connection is taken.

With ``search.decompose_llm`` and an LLM configured, the LLM's sub-queries replace the
rules' (``LLMSubQueries``: cached per tenant and question, so a question asked again
costs no call; on an LLM failure the rules answer).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict

from app.prompts import decompose as decompose_prompt
from app.providers.llm import LLM, LLMError, LLMUsage
from app.services.retrieval.expansion import QUESTION_WORDS

_NAME = r"[A-Z][a-z][\w'-]*(?:\s+[A-Z][a-z][\w'-]*)?"  # one or two title-case words
_POSSESSIVE = r"(?:(?:'|\u2019)s)?"
_CONJUNCTION = re.compile(
    rf"\b(?P<both>both\s+)?(?P<items>{_NAME}{_POSSESSIVE}"
    # at most 8 commas: each attempt reads a bounded stretch, so a long query of commas
    # without a conjunction costs linear time, not quadratic (3 s at 20,000 characters)
    rf"(?:\s*,\s*{_NAME}{_POSSESSIVE}){{0,8}},?\s+(?:and|or|&)\s+{_NAME}{_POSSESSIVE})"
    rf"(?P<after>\s+both\b)?"
)
_ITEM = re.compile(rf"{_NAME}{_POSSESSIVE}")
# The plural verb of a question about several people, made singular for one of them.
_AGREEMENT = {"have": "has", "do": "does", "are": "is", "were": "was"}
_PLURAL_VERB = re.compile(r"\b(have|do|are|were)(\s+)$", re.IGNORECASE)  # just before
MAX_ITEMS = 3


def sub_queries(query: str) -> list[str]:
    """One question per name of the first conjunction of names; [] when there is none."""
    for match in _CONJUNCTION.finditer(query):
        if match.start() == 0:
            continue  # the question's first word is capitalised anyway: not a name
        items = [item.strip() for item in _ITEM.findall(match.group("items"))]
        names = [item for item in items if item.split()[0].lower() not in QUESTION_WORDS]
        if len(names) < 2 or len(names) != len(items):
            continue
        before = _PLURAL_VERB.sub(_singular, query[: match.start()], count=1)
        after = query[match.end() :]
        found: list[str] = []
        for name in names[:MAX_ITEMS]:
            text = re.sub(r"\s{2,}", " ", f"{before}{name}{after}").strip()
            if text.lower() != query.lower() and text not in found:
                found.append(text)
        return found
    return []


def _singular(match: re.Match[str]) -> str:
    word = match.group(1)
    singular = _AGREEMENT[word.lower()]
    return (singular.capitalize() if word[0].isupper() else singular) + match.group(2)


class LLMSubQueries:
    """The LLM's sub-queries of a question, the last ``size`` questions per process kept
    (keyed by tenant too: a cached answer is faster, and must not tell one tenant what
    another asked)."""

    def __init__(self, size: int = 1024) -> None:
        self._size = size
        self._cache: OrderedDict[tuple[str, str, str], list[str]] = OrderedDict()
        self._lock = threading.Lock()

    def get(
        self, llm: LLM, tenant: str, query: str
    ) -> tuple[list[str] | None, LLMUsage | None, str | None]:
        """(sub-queries or None on failure, the call's usage if one was made, its error)."""
        key = (tenant, f"{llm.provider}:{llm.model}:{decompose_prompt.VERSION}", query)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return list(self._cache[key]), None, None
        try:
            result = llm.complete_json(
                system=decompose_prompt.SYSTEM,
                prompt=decompose_prompt.build_prompt(query),
                schema=decompose_prompt.SubQueries,
                max_tokens=300,
            )
        except LLMError as exc:
            return None, exc.usage, exc.message
        found = [sub for sub in result.value.sub_queries if sub.lower() != query.lower()]
        with self._lock:
            self._cache[key] = found
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return list(found), result.usage, None
