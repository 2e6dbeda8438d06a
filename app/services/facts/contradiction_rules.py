"""Does a newer fact contradict an older one? Rules for when no LLM is configured.

Superseding facts ("Alice moved to Berlin" after "Alice lives in Paris") must close the
validity of the old fact, or retrieval will keep serving stale answers. Without a model
we read both statements into (subject, predicate, value, negated) claims with a few
dozen patterns for the predicates that change over a life (residence, employer, partner,
age, counts, favourites, likes) and call it a contradiction when the same subject gets
a different value for a single-valued predicate, or the same statement is negated.
Anything the rules do not understand is judged compatible: a false "contradiction"
would silently retire a true memory, which is worse than keeping a stale one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from app.services.common.numbers import alternation, spelled

# The counts a statement of one's life spells out ("has three kids"): zero to twelve,
# and "no" for zero ("has no pets"); larger counts are read only in digits.
_NUMBER_WORDS = spelled(range(13)) | {"no": 0}
_NUM = rf"(?:\d{{1,3}}|{alternation(_NUMBER_WORDS)})"
_PRONOUNS = frozenset({"he", "she", "they", "i", "we", "his", "her", "their", "my", "our"})


def _words(text: str) -> frozenset[str]:
    """A word list written as a block of text, so long lexicons stay readable."""
    return frozenset(text.split())


_RELATIONS = _words(
    """
    sister brother mother father mom mum dad son daughter kid child children kids wife
    husband partner boyfriend girlfriend spouse fiance fiancee friend dog cat pet boss
    colleague coworker neighbor neighbour cousin aunt uncle grandma grandpa grandmother
    grandfather parents team company family baby niece nephew roommate
    """
)
_PARTNER_NOUNS = frozenset(
    {"wife", "husband", "partner", "boyfriend", "girlfriend", "spouse", "fiance", "fiancee"}
)
_ARTICLES_RE = re.compile(r"^(?:the|a|an|his|her|their|my|our|its)\s+", re.IGNORECASE)
_SUBJECT_RE = re.compile(
    r"^\s*(?P<head>[A-Z][\w-]*(?:\s+[A-Z][\w-]*)*|(?i:he|she|they|i|we)\b"
    r"|(?i:his|her|their|my|our)(?=\s))(?:'s)?(?:\s+(?P<rel>[a-z]+))?"
)
_NEGATION_RE = re.compile(
    r"\b(?:not|never|no\s+longer|n't|isn't|doesn't|don't|didn't|wasn't|hasn't|haven't"
    r"|can't|cannot|won't|aren't|weren't|nobody|none)\b|n't\b",
    re.IGNORECASE,
)
_CONTRACTIONS = (
    (re.compile(r"\bcan't\b", re.IGNORECASE), "can not"),
    (re.compile(r"\bwon't\b", re.IGNORECASE), "will not"),
    (re.compile(r"n't\b", re.IGNORECASE), " not"),
    (re.compile(r"\bcannot\b", re.IGNORECASE), "can not"),
)
# Words dropped before comparing two statements for a plain negation mismatch.
_NEUTRAL = _words(
    """
    not never no longer anymore any more do does did really actually at all still even
    the a an just
    """
)
# A value ends where a qualifier starts: "joined Microsoft in 2023", "Paris with her cat".
_VALUE_STOP_RE = re.compile(
    r"\s+(?:in|on|at|since|for|with|and|but|because|when|while|after|before|during|until"
    r"|last|next|this|from|as|where|who|which|to|now|again|anymore|recently|today|yesterday"
    r"|ago|so|then|though|although|by|a\s+lot|very\s+much|so\s+much|too)\b|[,.;:!?()]",
    re.IGNORECASE,
)
_CAP_VALUE_RE = re.compile(
    r"^(?:the\s+)?([A-Z][\w&'.-]*(?:\s+(?:of\s+|de\s+|the\s+)?[A-Z][\w&'.-]*)*)"
)
_HISTORIC_RE = re.compile(
    r"\b(?:used\s+to|lived|worked|was\s+married|previously|formerly|once|back\s+then"
    r"|as\s+a\s+(?:kid|child|teen)|grew\s+up|years\s+ago)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Verdict:
    """Whether newer contradicts older, how sure the rules are (0..1), and why."""

    contradicts: bool
    score: float
    reason: str


@dataclass(frozen=True)
class _Claim:
    predicate: str  # "residence", "employer", "age", "count:kid", "preference:sushi", ...
    value: str  # normalised for comparison
    negated: bool
    historic: bool
    shown: str  # the value as written, for the reason


def _value(text: str) -> str:
    """The object of a predicate: a capitalised name if there is one, else a short phrase."""
    text = text.strip()
    m = _CAP_VALUE_RE.match(text)
    if m:
        return m[1].strip(" .'")
    stop = _VALUE_STOP_RE.search(text)
    phrase = text[: stop.start()] if stop else text
    phrase = _ARTICLES_RE.sub("", phrase.strip())
    return " ".join(phrase.split()[:5])


def _stem(word: str) -> str:
    word = word.lower().strip(".,'\"")
    for suffix in ("ing", "ies", "es", "ed", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def _norm(value: str) -> str:
    value = _ARTICLES_RE.sub("", value.lower().strip())
    value = re.sub(r"^to\s+", "", value)
    return " ".join(_stem(w) for w in re.findall(r"[\w&+-]+", value))


def _number(word: str) -> str:
    word = word.lower()
    return str(_NUMBER_WORDS.get(word, word))


_Rule = tuple[re.Pattern[str], str]


def _rules(*pairs: tuple[str, str]) -> tuple[_Rule, ...]:
    return tuple((re.compile(p, re.IGNORECASE), name) for p, name in pairs)


# (pattern with a named group "v", predicate); all of them are tried on each statement.
_VALUE_RULES = _rules(
    (
        r"\b(?:lives|lived|living|live|resides|resided|is\s+based|was\s+based|settled)"
        r"\s+(?:now\s+)?(?:in|at)\s+(?P<v>.+)",
        "residence",
    ),
    (
        r"\b(?:moved|relocated|moving|relocating|moves)(?:\s+back|\s+here|\s+away)?"
        r"(?:\s+from\s+[A-Z][\w-]*(?:\s+[A-Z][\w-]*)*)?\s+to\s+(?P<v>.+)",
        "residence",
    ),
    (r"\b(?:is|was|comes|came)\s+(?:originally\s+)?from\s+(?P<v>.+)", "origin"),
    (
        r"\b(?:works|worked|working|work)\s+(?:now\s+)?(?:at|for)\s+(?P<v>.+)"
        r"|\b(?:joined|joins|joining|join)\s+(?P<v2>.+)"
        r"|\bgot\s+(?:a\s+)?(?:new\s+)?job\s+(?:at|with)\s+(?P<v3>.+)"
        r"|\b(?:is\s+employed|was\s+hired|got\s+hired|is\s+hired)\s+(?:by|at)\s+(?P<v4>.+)"
        r"|\bstarted\s+(?:a\s+new\s+job\s+|working\s+)?at\s+(?P<v5>.+)",
        "employer",
    ),
    (r"\bworks?\s+as\s+(?:an?\s+)?(?P<v>.+)", "job"),
    (
        r"\b(?:is|was|got|been)\s+married\s+to\s+(?P<v>.+)"
        r"|\b(?:is|was)\s+(?:dating|seeing|engaged\s+to|in\s+a\s+relationship\s+with)\s+(?P<v2>.+)"
        r"|\bmarried\s+(?P<v3>[A-Z].+)"
        r"|\bpartner\s+is\s+(?:now\s+)?(?:named\s+|called\s+)?(?P<v4>[A-Z].+)",
        "partner",
    ),
    (
        r"\bis\s+(?:now\s+)?(?P<v>single|married|divorced|engaged|widowed|separated"
        r"|in\s+a\s+relationship)\b",
        "status",
    ),
    (
        r"\b(?:is|was|turned|turns)\s+(?:now\s+)?(?P<v>\d{1,3})(?:\s+years?\s+old|\s*(?:yo|y/o)\b"
        r"|\s*$)|\b(?P<v2>\d{1,3})[-\s]years?[-\s]old\b",
        "age",
    ),
    (r"\b(?:birthday|bday)\s+is\s+(?:on\s+)?(?P<v>.+)", "birthday"),
    (r"\b(?:name\s+is|is\s+called|is\s+named|goes\s+by)\s+(?P<v>.+)", "name"),
    (r"\b(?:studies|studied|is\s+studying|goes\s+to\s+school)\s+at\s+(?P<v>.+)", "school"),
)
_COUNT_RE = re.compile(
    rf"\b(?:has|have|had|owns)\s+(?P<n>{_NUM})\s+(?P<noun>kids?|children|child|sons?|daughters?"
    r"|dogs?|cats?|pets?|siblings?|brothers?|sisters?|grandchildren|grandkids?|cars?"
    r"|bikes?|houses?)\b",
    re.IGNORECASE,
)
_FAVOURITE_RE = re.compile(
    r"\bfavou?rite\s+(?P<what>[\w\s-]{1,30}?)\s+(?:is|are|was)\s+(?P<v>.+)", re.IGNORECASE
)
_PREFERENCE_RE = re.compile(
    r"\b(?P<verb>likes|like|liked|loves|love|loved|enjoys|enjoy|enjoyed|adores|adore"
    r"|hates|hate|hated|dislikes|dislike|disliked|detests|detest|can\s+not\s+stand"
    r"|is\s+(?:really\s+)?into|is\s+(?:a\s+(?:big\s+|huge\s+)?)?fan\s+of)\s+(?P<v>.+)",
    re.IGNORECASE,
)
_NEGATIVE_VERBS = ("hate", "dislike", "detest", "can not stand")
_ALLERGY_RE = re.compile(r"\ballergic\s+to\s+(?P<v>.+)", re.IGNORECASE)


@lru_cache(maxsize=8192)
def _expand(text: str) -> str:
    text = text.replace("\u2019", "'")
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    return text


@lru_cache(maxsize=8192)
def _claims(body: str) -> tuple[_Claim, ...]:
    """Every claim the rules can read from the predicate part of a statement.

    Cached: a fact is compared with several candidates, and each as a candidate again."""
    text = _expand(body)
    negated = bool(_NEGATION_RE.search(text))
    historic = bool(_HISTORIC_RE.search(text))
    claims: list[_Claim] = []
    for pattern, predicate in _VALUE_RULES:
        for m in pattern.finditer(text):
            raw = next((g for g in m.groups() if g), None)
            if raw is None:
                continue
            value = raw if predicate in ("age", "status") else _value(raw)
            if value:
                claims.append(_Claim(predicate, _norm(value), negated, historic, value))
    for m in _COUNT_RE.finditer(text):
        noun = _stem(m["noun"]).replace("children", "child").replace("grandkid", "grandchild")
        noun = {"kid": "child", "childr": "child"}.get(noun, noun)
        count = _number(m["n"])
        claims.append(_Claim(f"count:{noun}", count, negated, historic, count))
    for m in _FAVOURITE_RE.finditer(text):
        value = _value(m["v"])
        claims.append(_Claim(f"favourite:{_norm(m['what'])}", _norm(value), False, False, value))
    for m in _PREFERENCE_RE.finditer(text):
        verb = " ".join(m["verb"].lower().split())
        positive = not verb.startswith(_NEGATIVE_VERBS)
        liked = positive != negated  # "does not like" flips a positive verb
        obj = _value(m["v"])
        if obj:
            sign = "+" if liked else "-"
            claims.append(_Claim(f"preference:{_norm(obj)}", sign, False, historic, obj))
    for m in _ALLERGY_RE.finditer(text):
        obj = _value(m["v"])
        sign = "-" if negated else "+"
        claims.append(_Claim(f"allergy:{_norm(obj)}", sign, False, False, obj))
    return tuple(claims)


_NAMED_PARTNER_RE = re.compile(r"^\s+is\s+(?:now\s+)?(?:named\s+|called\s+)?[A-Z]")


def _split_subject(text: str, subject: str | None) -> tuple[str, str | None, str]:
    """(who, relation, rest): 'Alice's sister lives in Rome' -> ('alice', 'sister', ...)."""
    m = _SUBJECT_RE.match(text)
    if not m:
        return (subject or "").lower(), None, text
    head, rel = m["head"], m["rel"]
    who = head.lower()
    if who in _PRONOUNS:
        who = (subject or who).lower()
    possessive = text[m.end("head") : m.end("head") + 2] == "'s" or head.lower() in (
        "his",
        "her",
        "their",
        "my",
        "our",
    )
    rest = text[m.end() :]
    if possessive and rel in _PARTNER_NOUNS and _NAMED_PARTNER_RE.match(rest):
        return who, None, f"partner{rest}"  # "Eve's husband is Tom" is about Eve
    if possessive and rel in _RELATIONS:
        return who, rel, rest
    if possessive:  # "Alice's favourite colour is ..." is about Alice
        return who, None, text[m.end("head") :].removeprefix("'s")
    return who, None, text[m.end("head") :]


def _same_subject(a: str, b: str) -> bool:
    if not a or not b:
        return True  # unknown on one side: let the predicate decide
    if a == b:
        return True
    first_a, first_b = a.split()[0], b.split()[0]
    return first_a == first_b and (len(a.split()) == 1 or len(b.split()) == 1)


def _compare_values(older: _Claim, newer: _Claim) -> tuple[bool, float, str] | None:
    """A verdict for two claims of one predicate, or None when they agree."""
    kind = older.predicate.split(":", 1)[0]
    if older.predicate.startswith(("preference:", "allergy:")):
        if older.value != newer.value:
            return True, 0.85, f"{kind} reversed for '{newer.shown}'"
        return None
    old_words, new_words = set(older.value.split()), set(newer.value.split())
    if older.value == newer.value or (
        kind not in ("age", "count") and (old_words <= new_words or new_words <= old_words)
    ):
        if older.negated != newer.negated:
            return True, 0.8, f"{kind} '{newer.shown}' negated"
        return None
    if older.negated or newer.negated:
        return None  # "does not live in X" and "lives in Y" can both be true
    if older.historic or newer.historic:
        return False, 0.3, f"different {kind}, but one statement is about the past"
    score = 0.9 if kind in ("age", "count") else 0.85
    return True, score, f"different {kind}: '{older.shown}' vs '{newer.shown}'"


@lru_cache(maxsize=8192)
def _tokens(text: str) -> tuple[str, ...]:
    words = re.findall(r"[\w&+-]+", _expand(text).lower())
    return tuple(_stem(w) for w in words if w not in _NEUTRAL and w != "longer")


def offline_contradiction(subject: str | None, older: str, newer: str) -> Verdict:
    """Whether newer contradicts older, judged by predicate rules and negation."""
    older_s, newer_s = older.strip().rstrip(".!"), newer.strip().rstrip(".!")
    if _tokens(older_s) == _tokens(newer_s) and bool(_NEGATION_RE.search(_expand(older_s))) == (
        bool(_NEGATION_RE.search(_expand(newer_s)))
    ):
        return Verdict(False, 0.0, "same statement")

    who_old, rel_old, body_old = _split_subject(older_s, subject)
    who_new, rel_new, body_new = _split_subject(newer_s, subject)
    if subject is not None:
        wanted = subject.lower()
        for who in (who_old, who_new):
            if who and not _same_subject(who, wanted):
                return Verdict(False, 0.0, f"different subjects: '{who}' is not '{wanted}'")
    if not _same_subject(who_old, who_new) or rel_old != rel_new:
        old_name = f"{who_old}'s {rel_old}" if rel_old else who_old
        new_name = f"{who_new}'s {rel_new}" if rel_new else who_new
        return Verdict(False, 0.0, f"different subjects: '{old_name}' vs '{new_name}'")

    # the same statement, once affirmed and once negated
    negated_old = bool(_NEGATION_RE.search(_expand(body_old)))
    negated_new = bool(_NEGATION_RE.search(_expand(body_new)))
    if negated_old != negated_new and _tokens(body_old) == _tokens(body_new):
        return Verdict(True, 0.85, "the same statement, negated")

    claims_old, claims_new = _claims(body_old), _claims(body_new)
    best: Verdict | None = None
    agreed: list[str] = []
    for a in claims_old:
        for b in claims_new:
            if a.predicate != b.predicate:
                continue
            outcome = _compare_values(a, b)
            if outcome is None:
                agreed.append(a.predicate.split(":", 1)[0])
                continue
            verdict = Verdict(*outcome)
            if best is None or (verdict.contradicts, verdict.score) > (
                best.contradicts,
                best.score,
            ):
                best = verdict
    if best is not None:
        return best
    if agreed:
        return Verdict(False, 0.05, f"compatible: same {agreed[0]}")
    if claims_old and claims_new:
        return Verdict(False, 0.1, "different predicates, both can hold")
    return Verdict(False, 0.1, "no conflicting predicate found")
