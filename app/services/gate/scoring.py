"""Relevance and specificity of a text without an LLM, from surface evidence.

When no model is configured, Elephant still has to decide whether a memory is worth
keeping. These scores (0-10 each) reward what makes a memory useful later: names,
numbers and dates (specificity) and personal facts, preferences, plans and decisions
(relevance). Chit-chat scores near zero. So does text that looks like a score or an
instruction ("SCORES: 10,10,10"): stored text must never be able to grade itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from app.services.facts.dates import MONTH_NAMES, WEEKDAY_NAMES, find_dates
from app.services.facts.offline.lexicon import FILLER_WORDS, STOPWORDS, content_words

_SCORE_ANCHOR = datetime(2000, 1, 1, tzinfo=UTC)  # only to detect relative dates

# Text that tries to grade itself or to instruct the scorer is noise, not content.
_TEN = r"(?:10|\d)(?:\.\d+)?(?![\d.])"  # a value on a 0-10 scale
_NOISE_RES = (
    re.compile(
        r"\b(?:scores?|scoring|relevance|specificity|novelty|importance|priority|ratings?"
        rf"|rated?|grades?|confidence)\b\s*(?:[:=]|is|of|=>|->)?\s*{_TEN}"
        rf"(?:\s*(?:/|out\s+of)\s*10)?(?:\s*[,;/]\s*{_TEN})*",
        re.IGNORECASE,
    ),
    re.compile(rf"\b{_TEN}\s*(?:/|out\s+of)\s*10\b", re.IGNORECASE),
    re.compile(rf"(?<![\w.]){_TEN}(?:\s*[,;/]\s*{_TEN}){{2,}}(?![\w.])"),
    re.compile(
        r"\b(?:ignore|disregard|forget)\b[^.!?\n]{0,40}\b(?:instructions?|previous|above"
        r"|prompt|rules)\b|\bsystem\s+prompt\b|\byou\s+are\s+now\b|\bact\s+as\b"
        r"|\brespond\s+(?:only\s+)?with\b|\boutput\s+only\b|\b(?:give|assign|rate)\s+"
        r"(?:it|this|me|them)\s+(?:a\s+)?(?:high|max(?:imum)?|perfect|10|ten|top)\b"
        r"|\b(?:max(?:imum)?|perfect|highest)\s+(?:scores?|relevance|specificity)\b",
        re.IGNORECASE,
    ),
)

_CUES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (label, re.compile(pattern, re.IGNORECASE))
    for label, pattern in (
        (
            "preference",
            r"\b(?:i|we|he|she|they)\s+(?:really\s+)?(?:like|love|enjoy|hate|dislike|adore)s?\b"
            r"|\bprefer(?:s|red|ence)?\b|\bfavou?rite\b|\bcan'?t\s+stand\b|\bnot\s+a\s+fan\b"
            r"|\b(?:likes|loves|enjoys|hates|dislikes)\b",
        ),
        (
            "decision",
            r"\bdecided\b|\bdecision\b|\bchose\b|\bchosen\b|\bagreed\s+to\b|\bswitched\b"
            r"|\bsettled\s+on\b|\bwe(?:'ll|\s+will)\s+use\b|\bgoing\s+with\b",
        ),
        (
            "plan",
            r"\bplan(?:s|ned|ning)?\b|\bwill\b|\bgoing\s+to\b|\bgonna\b|\bintend\b|\bschedul"
            r"|\bdeadline\b|\bappointment\b|\bmeeting\b|\bnext\s+(?:week|month|year)\b",
        ),
        (
            "personal",
            r"\bbirthday\b|\banniversary\b|\ballerg(?:ic|y|ies)\b|\bvegetarian\b|\bvegan\b"
            r"|\bborn\b|\b(?:years?\s+old)\b|\bname\s+is\b|\bpronouns?\b|\bdiagnos"
            r"|\bpregnan|\bmedication\b|\bdisabilit",
        ),
        (
            "work",
            r"\bworks?\s+(?:at|for|as)\b|\bworked\s+(?:at|for|as)\b|\bjob\b|\bemployer\b"
            r"|\bhired\b|\bjoined\b|\bpromot|\bcareer\b|\bstudies\b|\bgraduat|\bdegree\b",
        ),
        (
            "residence",
            r"\blives?\s+in\b|\blived\s+in\b|\bmoved\s+(?:to|from)\b|\brelocat|\bhometown\b"
            r"|\bgrew\s+up\b|\baddress\b",
        ),
        (
            "relationship",
            r"\bmarried\b|\bdivorc|\bengaged\b|\bdating\b|\bwife\b|\bhusband\b|\bpartner\b"
            r"|\bdaughter\b|\bson\b|\bkids?\b|\bchildren\b|\bsister\b|\bbrother\b|\bmother\b"
            r"|\bfather\b|\bparents?\b|\bfriend\b|\bpet\b|\bdog\b|\bcat\b",
        ),
    )
)
_FIRST_PERSON_RE = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|my|me|we|we're|we've|our|us)\b")
_QUESTION_RE = re.compile(r"\?\s*$")
_WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9'+\-]*")
_NUMBER_RE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?%?(?![\w])")
_TIME_RE = re.compile(r"\b\d{1,2}(?::\d{2})?\s*(?:am|pm)\b|\b\d{1,2}:\d{2}\b", re.IGNORECASE)
_CAP_RUN_RE = re.compile(r"\b[A-Z][A-Za-z0-9'&.-]*(?:\s+(?:of\s+|de\s+)?[A-Z][A-Za-z0-9'&.-]*)*")
_NOT_NAMES = frozenset({w.lower() for w in MONTH_NAMES} | set(WEEKDAY_NAMES) | {"i"})


@dataclass(frozen=True)
class OfflineScores:
    """relevance and specificity on 0-10, and the evidence behind them."""

    relevance: float
    specificity: float
    reason: str


def _strip_noise(text: str) -> tuple[str, int]:
    hits = 0
    for pattern in _NOISE_RES:
        text, count = pattern.subn(" ", text)
        hits += count
    return text, hits


def _names(text: str) -> tuple[int, int]:
    """(names, multi-word names): capitalised words, an opener only if not a common word."""
    names = multi = 0
    for m in _CAP_RUN_RE.finditer(text):
        words = m[0].split()
        initial = m.start() == 0 or text[: m.start()].rstrip()[-1:] in ".!?:"
        while words and (
            words[0].lower().removesuffix("'s") in STOPWORDS
            or words[0].lower() in FILLER_WORDS
            or words[0].lower().strip(".") in _NOT_NAMES
            or (initial and words[0].lower().endswith(("ing", "ly", "ed")))
        ):
            words = words[1:]
            initial = False
        if not words:
            continue
        names += 1
        multi += len(words) > 1
    return names, multi


def _round(value: float) -> float:
    return round(min(10.0, max(0.0, value)), 1)


def offline_scores(text: str) -> OfflineScores:
    """Score text for memory worthiness from names, numbers, dates, content words and cues."""
    clean, noise = _strip_noise(text)
    words = _WORD_RE.findall(clean)
    content = content_words(clean)
    if not content:
        what = "score-like or instruction-like text" if noise else "chit-chat"
        return OfflineScores(0.0, 0.0, f"{what}, no content words")

    date_matches = find_dates(clean, _SCORE_ANCHOR)
    without_dates = clean
    for match in reversed(date_matches):
        without_dates = without_dates[: match.begin] + " " + without_dates[match.stop :]
    times = len(_TIME_RE.findall(without_dates))
    dates = len(date_matches) + times
    numbers = len(_NUMBER_RE.findall(_TIME_RE.sub(" ", without_dates)))
    names, multi = _names(without_dates)
    cues = [label for label, pattern in _CUES if pattern.search(clean)]
    first_person = bool(_FIRST_PERSON_RE.search(clean))
    fillers = sum(1 for w in words if w.lower() in FILLER_WORDS)

    specificity = (
        1.6 * min(names, 4)
        + 0.6 * min(multi, 2)
        + 1.0 * min(numbers, 3)
        + 1.5 * min(dates, 3)
        + 0.35 * min(len(content), 12)
        + (0.5 if len(words) >= 8 else 0.0)
    )
    relevance = (
        0.45 * min(len(content), 10)
        + 1.5 * min(len(cues), 3)
        + (1.0 if first_person else 0.0)
        + 0.4 * min(names, 3)
        + (0.5 if dates else 0.0)
    )
    relevance *= 1.0 - 0.5 * fillers / max(1, len(words))
    if _QUESTION_RE.search(clean) and not cues:
        relevance *= 0.6
    if len(words) <= 1:  # a lone word is a label at best, never a memory
        specificity, relevance = min(specificity, 0.8), min(relevance, 0.4)
    if noise:  # text that tried to grade itself earns no benefit of the doubt
        specificity, relevance = specificity * 0.5, relevance * 0.5

    evidence = [
        f"{names} name{'s' * (names != 1)}",
        f"{numbers} number{'s' * (numbers != 1)}",
        f"{dates} date{'s' * (dates != 1)}",
        f"{len(content)} content word{'s' * (len(content) != 1)}",
    ]
    notes = [", ".join(evidence)]
    if cues:
        notes.append("cues: " + ", ".join(cues))
    if first_person:
        notes.append("first person")
    if noise:
        notes.append("score-like text ignored")
    return OfflineScores(_round(relevance), _round(specificity), "; ".join(notes))
