"""Near-duplicate dedup that never drops new information.

Embeddings say two texts are *about* the same thing; they barely notice *what* the
texts say about it. MiniLM puts "the API server runs on port 8080" and "... on port
9090" at cosine 0.99, and "Carol is allergic to peanuts" next to "Carol is not
allergic to peanuts" at 0.93. A dedup rule on cosine (and token overlap) alone
therefore swallows exactly the updates a memory must keep: the new value is never
stored, never reaches fact extraction, never triggers a contradiction.

So a close neighbour (the cosine rule, unchanged: ``dedup.*`` settings) is merged
only when both texts carry the same information. Strict checks, any difference
keeps both texts:

- negation: how many negation words (not, never, no, n't, without, ...);
- numbers, normalised (50,000 = 50000 = 50k; number words two..ninety);
- times (10am = 10:00, 3 pm = 15:00) and dates, resolved to spans against a fixed
  anchor, so "17 May 2023" = "May 17th, 2023" but "Monday" != "Friday";
- identifiers (Kite1, v2.3.1, emails, URLs, host names, snake_case);
- names (capitalised words), forgiving case: a name counts as missing only when
  the other text lacks the word altogether;
- units and currencies (days vs weeks, km vs miles, $ vs EUR, %);
- two words trading places ("Alice owes Bob" vs "Bob owes Alice").

Then a lenient check on content words (stopwords dropped, inflection stripped):
when they differ and the texts are the same sentence with one edit (a run of words
swapped, added or dropped: "... in the blue room" vs "... in the green room"), they
differ. Texts worded differently (several edits) are taken for paraphrases ("Alice
moved to Berlin in June 2024" vs "In June 2024, Alice relocated to Berlin"): there
the embedder decides, as before.

The checks lean towards keeping: a wrongly kept paraphrase costs one extra row, a
wrongly merged update loses a fact (a one-word synonym swap, "lives" vs "resides",
is kept). Everything is regexes and word lists: pure, deterministic, offline, under
a millisecond for a sentence pair.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from difflib import SequenceMatcher
from typing import Literal

from app.config import DedupSettings
from app.services.common.numbers import NUMBER_WORDS, alternation
from app.services.common.text import jaccard
from app.services.facts.dates import describe_span, find_dates
from app.services.facts.offline.lexicon import FILLER_WORDS, STOPWORDS

Kind = Literal["negation", "number", "time", "date", "identifier", "name", "unit", "order", "words"]

# Relative dates ("yesterday", "on Monday") resolve against this fixed day, so the same
# phrase always gives the same span and two different phrases give different spans.
_ANCHOR = datetime(2001, 1, 10, tzinfo=UTC)
# Word alignment is quadratic; above this many tokens texts with different content words
# are simply kept apart.
_ALIGN_LIMIT = 600


def _word_list(text: str) -> list[str]:
    """A word list written as a block of text, so lexicons stay readable."""
    return text.split()


_NEGATIONS = frozenset(_word_list("not no never without none nobody nothing neither nor nowhere"))
# Function words that still change what a sentence says ("before" vs "after" lunch).
_MEANINGFUL = frozenset(
    _word_list(
        """before after above below over under more less fewer most least all some every
        only always sometimes often rarely usually seldom must might may will"""
    )
)
# Every number word but "one": far more often a pronoun ("the blue one") than a count.
_NUMBER_WORDS = {word: value for word, value in NUMBER_WORDS.items() if word != "one"}
_MULTIPLIERS = {"hundred": 10**2, "k": 10**3, "thousand": 10**3, "m": 10**6, "mn": 10**6}
_MULTIPLIERS |= {"million": 10**6, "bn": 10**9, "billion": 10**9}


def _lexicon(groups: dict[str, str]) -> dict[str, str]:
    """{canonical: "spelling spelling ..."} -> {spelling: canonical}."""
    return {spelling: canonical for canonical, text in groups.items() for spelling in text.split()}


_UNITS = _lexicon(
    {
        "second": "second seconds sec secs",
        "minute": "minute minutes min mins",
        "hour": "hour hours hr hrs h",
        "day": "day days",
        "week": "week weeks",
        "month": "month months",
        "year": "year years yr yrs",
        "ms": "ms millisecond milliseconds",
        "km": "km kms kilometre kilometres kilometer kilometers",
        "m": "metre metres meter meters",
        "cm": "cm centimetre centimetres centimeter centimeters",
        "mm": "mm millimetre millimetres millimeter millimeters",
        "mile": "mile miles mi",
        "ft": "ft foot feet",
        "inch": "inch inches",
        "kg": "kg kgs kilo kilos kilogram kilograms",
        "g": "g gram grams",
        "lb": "lb lbs",
        "pound": "pound pounds",
        "ton": "ton tons tonne tonnes",
        "litre": "l litre litres liter liters",
        "kb": "kb kilobyte kilobytes",
        "mb": "mb megabyte megabytes",
        "gb": "gb gigabyte gigabytes gib",
        "tb": "tb terabyte terabytes",
        "percent": "% percent",
        "celsius": "°c celsius",
        "fahrenheit": "°f fahrenheit",
        "usd": "$ usd dollar dollars",
        "eur": "€ eur euro euros",
        "gbp": "£ gbp sterling",
        "jpy": "¥ jpy yen",
        "chf": "chf franc francs",
        "cny": "cny yuan renminbi",
        "inr": "inr rupee rupees",
    }
)

_CONTRACTIONS = (
    (re.compile(r"\bwon't\b", re.IGNORECASE), "will not"),
    (re.compile(r"\bcan't\b|\bcannot\b", re.IGNORECASE), "can not"),
    (re.compile(r"\bshan't\b", re.IGNORECASE), "shall not"),
    (re.compile(r"n't\b", re.IGNORECASE), " not"),
    (re.compile(r"'(?:s|m|re|ve|ll|d)\b", re.IGNORECASE), ""),
    (re.compile(r"\bper cent\b", re.IGNORECASE), "percent"),
)
_EMAIL_URL_RE = re.compile(
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\b(?:https?|ftp)://[^\s,;]+|\bwww\.[^\s,;]+", re.IGNORECASE
)
_TIME_RE = re.compile(
    r"\b(\d{1,2})(?:[:.](\d{2}))?\s*([ap])\.?\s?m\b"
    r"|\b(\d{1,2}):(\d{2})\b"
    r"|\b(\d{1,2})\s*o'clock\b"
    r"|\b(noon|midday|midnight)\b",
    re.IGNORECASE,
)
_VERSION_RE = re.compile(r"(?<![\w.])v?\d+(?:\.\d+){2,}(?![\w.]*\w)|\bv\d+(?:\.\d+)?\b")
_UNIT_SUFFIX = "|".join(
    sorted((re.escape(u) for u in _UNITS if u not in "$€£¥"), key=len, reverse=True)
)
_NUMBER_WORD = alternation(_NUMBER_WORDS)
# A number with what belongs to it: currency before, an ordinal suffix, a multiplier
# ("50k", "2 million") or a unit after ("5km", "3 days"). Units count only next to a
# number: "every year" is a habit, "3 years" a quantity.
_NUMBER_RE = re.compile(
    r"(?<![\w.,])(?P<currency>[$€£¥])?\s?"
    rf"(?P<value>\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|\d+(?:\.\d+)?|{_NUMBER_WORD})"
    r"(?:(?:st|nd|rd|th)\b|\s?(?P<mult>hundred|thousand|million|billion|bn|mn|k|m)\b"
    rf"|\s?(?P<unit>{_UNIT_SUFFIX})(?!\w))?"
    r"(?![\w]|[.,]\d)",
    re.IGNORECASE,
)
_IDENTIFIER_RE = re.compile(
    r"(?<![\w./-])(?:"
    r"(?=[\w./-]*[A-Za-z])(?=[\w./-]*\d)[A-Za-z0-9][\w./-]*[A-Za-z0-9]"  # Kite1, B-12, 2fa
    r"|[A-Za-z][\w-]*(?:\.[A-Za-z][\w-]+)+"  # api.acme.com, config_file.yaml
    r"|[A-Za-z]\w*_\w+"  # snake_case
    r")(?![\w/-])"
)
_WORD_RE = re.compile(r"[^\W\d_](?:[^\W\d_]|['-])*")  # letters, any script
_TOKEN_RE = re.compile(r"[\w$€£¥%]+")


# ------------------------------------------------------------------ differences


@dataclass(frozen=True)
class Difference:
    """One kind of information one text has and the other lacks (or has otherwise)."""

    kind: Kind
    stored: tuple[str, ...]
    candidate: tuple[str, ...]

    def describe(self) -> str:
        """'number 8080 -> 9090': what the stored text says, then what the new one says."""
        return f"{self.kind} {_side(self.stored)} -> {_side(self.candidate)}"


def _side(values: tuple[str, ...]) -> str:
    return ", ".join(values) if values else "none"


def describe(differences: Sequence[Difference]) -> str:
    """All differences in one line, for the admission log."""
    return "; ".join(difference.describe() for difference in differences)


# ------------------------------------------------------------------ what a text says


Values = dict[str, str]  # a normalised key -> the text as written, for the reason


@dataclass(frozen=True)
class Information:
    """The parts of a text a merge must not lose. Values map a key to its display form."""

    negations: tuple[str, ...]
    numbers: Values
    times: Values
    dates: Values
    identifiers: Values
    names: Values
    units: Values
    stems: Values  # content-word stem -> the word
    tokens: tuple[str, ...]  # every word and number, lower case: for alignment
    vocabulary: frozenset[str]  # the same as a set, to forgive capitalisation


def _normalise(text: str) -> str:
    text = text.replace("\u2019", "'")
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    return text


def _take(pattern: re.Pattern[str], text: str) -> tuple[list[re.Match[str]], str]:
    """The matches of pattern and the text with each match blanked out."""
    matches = list(pattern.finditer(text))
    for match in reversed(matches):
        text = text[: match.start()] + " " + text[match.end() :]
    return matches, text


def _time_key(match: re.Match[str]) -> str:
    """'3 pm', '15:00' and "3 o'clock" -> '15:00', '15:00', '03:00'."""
    hour_ampm, minute_ampm, half, hour, minute, oclock, word = match.groups()
    if word is not None:
        return "00:00" if word.lower() == "midnight" else "12:00"
    if half is not None:
        value = int(hour_ampm) % 12 + (12 if half.lower() == "p" else 0)
        return f"{value:02d}:{minute_ampm or '00'}"
    if oclock is not None:
        return f"{int(oclock):02d}:00"
    return f"{int(hour):02d}:{minute}"


def _number_key(value: str, multiplier: str | None) -> str:
    """'50,000' and '50k' -> '50000'; '3.10' stays '3.10' (a version, maybe) unless scaled."""
    digits = str(_NUMBER_WORDS.get(value.lower(), value.replace(",", "")))
    if multiplier is None:
        return digits
    try:
        scaled = Decimal(digits) * _MULTIPLIERS[multiplier.lower()]
    except (InvalidOperation, KeyError):
        return digits
    return str(scaled.quantize(Decimal(1)) if scaled == scaled.to_integral() else scaled)


def _stem(word: str) -> str:
    """A light suffix stripper: moved/moves/moving/move -> mov, allergies -> allergy."""
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if len(word) > 5 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) > 4 and word.endswith("ed"):
        word = word[:-2]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]
    return word


def _is_function_word(lower: str) -> bool:
    if lower in _MEANINGFUL:
        return False
    return lower in STOPWORDS or lower in FILLER_WORDS or lower in _NEGATIONS


def _read_dates(text: str) -> tuple[Values, str]:
    """Date phrases resolved to spans, so "17 May 2023" and "May 17th, 2023" agree."""
    dates: Values = {}
    for match in reversed(find_dates(text, _ANCHOR)):
        mention = match.mention
        key = f"{mention.start.date()}/{mention.end.date()}"
        shown = mention.phrase if mention.relative else describe_span(mention.start, mention.end)
        dates[key] = shown
        text = text[: match.begin] + " " + text[match.stop :]
    return dates, text


def _read_numbers(text: str) -> tuple[Values, Values, str]:
    """Numbers (normalised) and the units or currencies written next to them."""
    numbers: Values = {}
    units: Values = {}
    found, text = _take(_NUMBER_RE, text)
    for m in found:
        multiplier, unit = m["mult"], m["unit"]
        if multiplier == "m" and m["currency"] is None:  # "5m" is metres; "$5m", "5M" millions
            multiplier, unit = None, "metre"
        numbers[_number_key(m["value"], multiplier)] = m[0].strip()
        for spelling in (m["currency"], unit):
            if spelling is not None:
                units[_UNITS[spelling.lower()]] = spelling
    return numbers, units, text


def _read_words(text: str) -> tuple[tuple[str, ...], Values, Values]:
    """Negation words, capitalised words (names) and content-word stems."""
    negations: list[str] = []
    names: Values = {}
    stems: Values = {}
    for raw in _WORD_RE.findall(text):
        word = raw.strip("'-")
        lower = word.lower()
        if lower in _NEGATIONS:
            negations.append(lower)
        elif lower and not _is_function_word(lower):
            if word[0].isupper():
                names.setdefault(lower, word)
            stems[_stem(lower)] = lower
    return tuple(negations), names, stems


def read(text: str) -> Information:
    """Pull out everything a merge must preserve, most specific patterns first: each
    match is blanked so its digits or words are not read again by a later pattern
    (the 10 of "10am" is a time, the 1 of "Kite1" part of a name, not numbers)."""
    text = _normalise(text)
    tokens = tuple(token.lower() for token in _TOKEN_RE.findall(text))
    found, rest = _take(_EMAIL_URL_RE, text)
    identifiers = {m[0].lower().rstrip("./"): m[0] for m in found}
    found, rest = _take(_TIME_RE, rest)
    times = {_time_key(m): m[0].strip() for m in found}
    dates, rest = _read_dates(rest)
    found, rest = _take(_VERSION_RE, rest)
    identifiers.update((m[0].lower().lstrip("v"), m[0]) for m in found)
    numbers, units, rest = _read_numbers(rest)
    found, rest = _take(_IDENTIFIER_RE, rest)
    identifiers.update((m[0].lower(), m[0]) for m in found)
    negations, names, stems = _read_words(rest)
    return Information(
        negations=negations,
        numbers=numbers,
        times=times,
        dates=dates,
        identifiers=identifiers,
        names=names,
        units=units,
        stems=stems,
        tokens=tokens,
        vocabulary=frozenset(tokens),
    )


# ------------------------------------------------------------------ comparison


def _values(
    kind: Kind,
    stored: dict[str, str],
    candidate: dict[str, str],
    forgive: tuple[frozenset[str], frozenset[str]] | None = None,
) -> Difference | None:
    """Keys one side has and the other lacks. With forgive, a word the other text holds
    in any case ("berlin" vs "Berlin") does not count as missing."""
    only_stored = [key for key in stored if key not in candidate]
    only_candidate = [key for key in candidate if key not in stored]
    if forgive is not None:
        only_stored = [key for key in only_stored if key not in forgive[1]]
        only_candidate = [key for key in only_candidate if key not in forgive[0]]
    if not only_stored and not only_candidate:
        return None
    return Difference(
        kind,
        tuple(stored[key] for key in only_stored),
        tuple(candidate[key] for key in only_candidate),
    )


def _negation(stored: Information, candidate: Information) -> Difference | None:
    """Counts, not words: "never eats meat" and "does not eat meat" agree."""
    if len(stored.negations) == len(candidate.negations):
        return None
    return Difference("negation", stored.negations, candidate.negations)


def _edits(stored: Information, candidate: Information) -> list[tuple[str, int, int, int, int]]:
    """The word-level edits turning one text into the other (equal runs left out)."""
    matcher = SequenceMatcher(a=stored.tokens, b=candidate.tokens, autojunk=False)
    return [op for op in matcher.get_opcodes() if op[0] != "equal"]


def _content(info: Information, tokens: Sequence[str]) -> tuple[str, ...]:
    """The content words among tokens (their stems are in info.stems)."""
    return tuple(token for token in tokens if _stem(token) in info.stems)


def _swapped_places(stored: Information, candidate: Information) -> Difference | None:
    """Two words that trade places swap roles: "Alice owes Bob" vs "Bob owes Alice",
    "tea over coffee" vs "coffee over tea". The words are the same, so only their
    positions tell; a paraphrase moves a whole phrase instead ("In Osaka, Acme ..."
    vs "Acme ... in Osaka")."""
    left, right = stored.tokens, candidate.tokens
    if len(left) != len(right):
        return None
    changed = [i for i, (a, b) in enumerate(zip(left, right, strict=True)) if a != b]
    if len(changed) != 2:
        return None
    i, j = changed
    if left[i] != right[j] or left[j] != right[i]:
        return None
    return Difference("order", (left[i], left[j]), (right[i], right[j]))


def _strict(stored: Information, candidate: Information) -> list[Difference]:
    forgive = (stored.vocabulary, candidate.vocabulary)
    found = [
        _negation(stored, candidate),
        _values("number", stored.numbers, candidate.numbers),
        _values("time", stored.times, candidate.times),
        _values("date", stored.dates, candidate.dates),
        _values("identifier", stored.identifiers, candidate.identifiers),
        _values("name", stored.names, candidate.names, forgive),
        _values("unit", stored.units, candidate.units),
        _swapped_places(stored, candidate),
    ]
    return [difference for difference in found if difference is not None]


def _words(stored: Information, candidate: Information) -> Difference | None:
    """Content words, modulo stopwords and inflection. Texts with different content words
    differ when they are the same sentence with one edit (a run of words swapped, added
    or dropped): that is how an update is written ("... in the blue room" -> "... in
    the green room", "allergic to peanuts" -> "allergic to peanuts and shellfish"). A
    paraphrase rewords and moves words around, so its alignment has several edits; its
    closeness is left to the embedder."""
    if stored.stems.keys() == candidate.stems.keys():
        return None
    if max(len(stored.tokens), len(candidate.tokens)) > _ALIGN_LIMIT:
        # aligning long texts costs seconds; keeping both costs one row
        only_stored = [word for stem, word in stored.stems.items() if stem not in candidate.stems]
        only_candidate = [w for stem, w in candidate.stems.items() if stem not in stored.stems]
        return Difference("words", _few(only_stored), _few(only_candidate))
    edits = _edits(stored, candidate)
    if len(edits) != 1:
        return None
    _, a1, a2, b1, b2 = edits[0]
    left, right = (
        _content(stored, stored.tokens[a1:a2]),
        _content(candidate, candidate.tokens[b1:b2]),
    )
    if not left and not right:
        return None
    return Difference("words", _few(left), _few(right))


def _few(words: Sequence[str], limit: int = 6) -> tuple[str, ...]:
    """At most limit words, for a readable reason."""
    return tuple(words[:limit]) + (("...",) if len(words) > limit else ())


def differences(stored: str, candidate: str) -> list[Difference]:
    """What the two texts say differently; empty when they carry the same information.

    Strict kinds (numbers, dates, names, ...) are all reported; content words are only
    compared when those agree, so the reason names the sharpest difference.
    """
    left, right = read(stored), read(candidate)
    strict = _strict(left, right)
    if strict:
        return strict
    words = _words(left, right)
    return [] if words is None else [words]


# ------------------------------------------------------------------ the rule


def close_enough(similarity: float, stored: str, candidate: str, rules: DedupSettings) -> bool:
    """The cosine rule alone (the rule before issue 12, still the first filter): cosine at
    or above dedup.strong_cosine, or at or above dedup.near_cosine with token Jaccard
    above dedup.near_jaccard."""
    if similarity >= rules.strong_cosine:
        return True
    return similarity >= rules.near_cosine and jaccard(stored, candidate) > rules.near_jaccard


@dataclass(frozen=True)
class NearMatch:
    """A stored neighbour close enough by the cosine rule, and what it says otherwise."""

    memory_id: str
    similarity: float
    differences: tuple[Difference, ...]

    @property
    def same_information(self) -> bool:
        return not self.differences


@dataclass(frozen=True)
class Screening:
    """duplicate: the neighbour to merge into, if any; differing: close neighbours kept
    apart because they say something else (most similar first)."""

    duplicate: NearMatch | None
    differing: tuple[NearMatch, ...]


def screen(
    candidate: str, neighbours: Iterable[tuple[str, str, float]], rules: DedupSettings
) -> Screening:
    """Decide dedup for a candidate against its stored neighbours ``(id, text, cosine)``,
    most similar first: merge into the first close neighbour with the same information."""
    differing: list[NearMatch] = []
    for memory_id, text, similarity in neighbours:
        if not close_enough(similarity, text, candidate, rules):
            continue
        match = NearMatch(memory_id, similarity, tuple(differences(text, candidate)))
        if match.same_information:
            return Screening(match, tuple(differing))
        differing.append(match)
    return Screening(None, tuple(differing))
