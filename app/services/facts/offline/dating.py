"""Relative dates in a clause rewritten as absolute ones, and the event date it names.

A stored fact must say "on 7 May 2023", not "yesterday"; a birthday ("14 March") and a
habit ("every Thursday") are left as written, and an opening date phrase moves to the
end of the first clause so the rules after it see the clause's real subject.
"""

from __future__ import annotations

import re
from datetime import datetime

from app.services.facts.dates import (
    MONTH_NAMES,
    WEEKDAY_NAMES,
    DateMatch,
    find_dates,
    render_mention,
)
from app.services.facts.offline.lexicon import DIGIT_RE

_PREPOSITION_BEFORE_RE = re.compile(
    r"\b(?:on|in|since|until|till|by|from|before|after|during|of|around|at|for|through)\s+$",
    re.IGNORECASE,
)

_YEAR_IN_PHRASE_RE = re.compile(r"\b\d{4}\b|\d{4}-")


def _recurring(match: DateMatch) -> bool:
    """'14 March' without a year: likely a birthday or anniversary, so leave it alone."""
    phrase = match.mention.phrase
    return (
        match.mention.relative
        and (match.mention.end - match.mention.start).days == 1
        and bool(DIGIT_RE.search(phrase))
        and not _YEAR_IN_PHRASE_RE.search(phrase)
        and any(month.lower()[:3] in phrase.lower() for month in MONTH_NAMES)
    )


_HABITUAL_BEFORE_RE = re.compile(r"\b(?:every|each|most|all|other|the|a)\s+$", re.IGNORECASE)
_WEEKDAY_PREFIXES = frozenset(day[:3] for day in WEEKDAY_NAMES)


def _habitual(text: str, match: DateMatch) -> bool:
    """'every Thursday', 'the Sunday market': a weekday that is no one date."""
    weekday = match.mention.phrase.split()[-1].lower()[:3] in _WEEKDAY_PREFIXES
    return weekday and bool(_HABITUAL_BEFORE_RE.search(text[: match.begin]))


# What follows a sentence-opening date phrase when the phrase is an adverbial and not
# the subject: "Last week, I ...", "Yesterday Tom ...", but not "Today is ...".
_CLAUSE_AFTER_DATE_RE = re.compile(
    r"\s*,\s*\S|\s+(?:[A-Z]|(?:we|he|she|they|it|there|you|my|our|his|her|their|your|the"
    r"|a|an)\b)"
)  # used with .match(text, pos), so no ^
# ...and when it is the subject: "Today is my birthday", "Last week was busy".
_DATE_AS_SUBJECT_RE = re.compile(
    r"'s\b|\s+(?:is|was|will|would|has|had|seems|seemed|looks|looked|sounds|sounded|feels"
    r"|felt|must|should|could|can|might|may)\b"
)


def rewrite_dates(text: str, anchor: datetime | None) -> tuple[str, datetime | None]:
    """Relative date phrases replaced by absolute ones, and the first event date.

    A sentence that opens with its date says it at the end instead ("Last week I
    adopted Rex" -> "I adopted Rex during the week of 29 January 2024"), so the
    pronoun and implicit-subject rules see the clause's real first word; a date that
    is the subject loses its preposition ("Today is ..." -> "5 February 2024 is ...").
    """
    matches = [m for m in find_dates(text, anchor) if not _recurring(m) and not _habitual(text, m)]
    event: datetime | None = matches[0].mention.start if matches else None
    out: list[str] = []
    pos = 0
    trailer = ""
    for match in matches:
        mention = match.mention
        if not mention.relative:
            continue
        replacement = render_mention(mention)
        if match.begin == 0 and _CLAUSE_AFTER_DATE_RE.match(text, match.stop):
            trailer, pos = replacement, match.stop
            continue
        bare = (match.begin == 0 and _DATE_AS_SUBJECT_RE.match(text, match.stop)) or (
            _PREPOSITION_BEFORE_RE.search(text[: match.begin])
        )  # "since last year" -> "since 2022", not "since in 2022"
        if bare and not replacement.startswith("around "):
            replacement = replacement.split(" ", 1)[1]
        out.append(text[pos : match.begin] + replacement)
        pos = match.stop
    out.append(text[pos:])
    rewritten = "".join(out)
    if trailer:
        rewritten = _append_to_first_clause(rewritten.strip(" ,").rstrip(" .!;:"), trailer)
    return rewritten, event


def _append_to_first_clause(text: str, phrase: str) -> str:
    """phrase at the end of text's first clause: 'I went to a fair on 24 April 2023, it was
    great'. A comma within the first four words lists names ('John, Maria and I ...')."""
    for comma in re.finditer(r",\s", text):
        if len(text[: comma.start()].split()) >= 4:
            return f"{text[: comma.start()]} {phrase}{text[comma.start() :]}"
    return f"{text} {phrase}"
