"""Names in a clause: where they stand, which capitalised words are only sentence
openers, and whether a name is a person, a place, an organisation or a thing."""

from __future__ import annotations

import re

from app.services.facts.dates import MONTH_NAMES, WEEKDAY_NAMES
from app.services.facts.offline.lexicon import (
    EMOTION_ADJECTIVES,
    FILLER_WORDS,
    IRREGULAR_PAST,
    STOPWORDS,
    word_set,
)

_NAME_RE = re.compile(
    r"\b(?:[A-Z][A-Za-z'\u2019&.-]*[A-Za-z+]|[A-Z]{2,}\+?|[A-Z])"
    r"(?:\s+(?:of\s+|de\s+|du\s+|van\s+|von\s+|the\s+)?(?:[A-Z][A-Za-z'\u2019&.-]*[A-Za-z+]"
    r"|[A-Z]{2,}\+?))*"
)
_NOT_NAMES = frozenset(
    {w.lower() for w in MONTH_NAMES}
    | set(WEEKDAY_NAMES)
    | {"i", "i'm", "i've", "i'd", "i'll", "ok", "okay", "mom", "dad", "god", "internet", "tv"}
)
_PLACE_CUE_RE = re.compile(
    r"\b(?:in|to|from|near|visited|visiting|visit|around|across|toward|towards|outside"
    r"|moved\s+to|lives\s+in|live\s+in|trip\s+to|flew\s+to|back\s+to)\s+(?:the\s+)?$",
    re.IGNORECASE,
)
_ORG_CUE_RE = re.compile(
    r"\b(?:works?\s+(?:at|for)|worked\s+(?:at|for)|working\s+(?:at|for)|joined|job\s+(?:at|with)"
    r"|employed\s+by|hired\s+by|intern(?:ship)?\s+at|studies\s+at|studied\s+at|study\s+at)"
    r"\s+(?:the\s+)?$",
    re.IGNORECASE,
)
_PERSON_CUE_RE = re.compile(
    r"\b(?:Mr|Mrs|Ms|Dr|friend|sister|brother|mother|father|mom|dad|son|daughter|husband"
    r"|wife|partner|boyfriend|girlfriend|cousin|aunt|uncle|grandma|grandpa|named|called"
    r"|kid|colleague|boss|coworker|neighbor|neighbour|mentor)\.?,?\s+$",
    re.IGNORECASE,
)


def is_common_word(word: str, initial: bool) -> bool:
    """Whether a capitalised word is an ordinary word; sentence openers are judged harder."""
    lower = word.lower().removesuffix("'s")
    if lower in STOPWORDS or lower in FILLER_WORDS or lower in _NOT_NAMES:
        return True
    if "'" in lower and lower.split("'")[0] in STOPWORDS:
        return True
    return initial and (
        lower.endswith(("ing", "ly", "ed"))
        or lower in IRREGULAR_PAST
        or lower in EMOTION_ADJECTIVES
        or lower in _COMMON_OPENERS
    )


_COMMON_OPENERS = word_set(
    """
    love like painting music nature family life art work school kids being taking making
    having seeing finding getting playing reading writing running going thinking feels seems
    looks sounds makes reminds hope gotta wish
    """
)


_NAME_VERB_RE = re.compile(
    r"^(?:'s\b|\s+(?:is|was|has|had|does|did|can|could|will|would|should|must|might|may"
    r"|said|says|went|got|made|took|came|gave|found|told|became|seems|just|also|really)\b"
    r"|\s+and\s+[A-Z]|\s+[a-z]+(?<!ss)s\b|\s+[a-z]{2,}ed\b)"
)


def _opener_is_name(word: str, after: str, people: frozenset[str]) -> bool:
    """A sentence-initial capitalised word is a name if a verb follows it like a subject.

    'Alice lives ...', 'Max must ...', "Aragorn's story": yes; 'Funny photo',
    'Weddings are ...': no.
    """
    if word.lower() in people:
        return True
    if is_common_word(word, initial=True):
        return False
    return word.isupper() or word.endswith("'s") or bool(_NAME_VERB_RE.match(after))


def find_names(text: str, people: frozenset[str] = frozenset()) -> list[tuple[int, str]]:
    """Capitalised names with their offsets; a sentence-initial common word is not one."""
    found: list[tuple[int, str]] = []
    for m in _NAME_RE.finditer(text):
        words = m[0].split()
        start = m.start()
        if (
            start == 0
            and len(words) == 1
            and not _opener_is_name(words[0], text[m.end() :], people)
        ):
            continue
        while words and is_common_word(words[0], initial=start == 0):
            start = text.index(words[0], start) + len(words[0])
            words = words[1:]
            if words:
                start = text.index(words[0], start)
        while words and words[-1].lower() in ("of", "de", "the", "du", "van", "von"):
            words = words[:-1]
        if not words:
            continue
        name = re.sub(r"['\u2019]s$", "", " ".join(words)).rstrip(".")
        if len(name) < 2 or name.lower() in _NOT_NAMES:
            continue
        found.append((start, name))
    return found


def entity_type(text: str, offset: int, name: str, people: frozenset[str]) -> str:
    if name.lower() in people or name.split()[0].lower() in people:
        return "person"
    before = text[max(0, offset - 40) : offset]
    if _PERSON_CUE_RE.search(before):
        return "person"
    if _ORG_CUE_RE.search(before):
        return "organization"
    if _PLACE_CUE_RE.search(before):
        return "place"
    return "thing"


def leading_name(text: str, people: frozenset[str] = frozenset()) -> str | None:
    """The name a sentence opens with ('Alice' in 'Alice lives in Paris'), if any."""
    m = _NAME_RE.match(text)
    if not m:
        return None
    words = m[0].split()
    if len(words) == 1 and not _opener_is_name(words[0], text[m.end() :], people):
        return None
    if is_common_word(words[0], initial=True):
        return None
    return re.sub(r"['\u2019]s$", "", m[0]).strip()[:200]
