"""The dates a question names, as one span search can favour (a soft prior, not a filter).

"What did Jon do in June 2023?" or "between 11 and 15 August" should lift what
happened then over what only shares the words; a question without a date is
ranked as before. Relative phrases ("last week", "yesterday") resolve against
when the question is asked (the request's ``asked_at``, else now).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from app.services.facts.dates import find_dates

# "11 to 15 August" / "August 11 and 15": the second day of a range the parser reads
# as one date; it ends the span in the same month.
_RANGE_END_RE = re.compile(
    r"^\s*(?:-|\u2013|to|and|until|through|till)\s*(\d{1,2})(?:st|nd|rd|th)?\b", re.IGNORECASE
)
_RANGE_START_RE = re.compile(
    r"\b(\d{1,2})(?:st|nd|rd|th)?\s*(?:-|\u2013|to|and|until|through|till)\s*$", re.IGNORECASE
)
# "dinner on Friday" is as often a plan as a memory: a bare weekday names no date
_BARE_WEEKDAY_RE = re.compile(r"^(?:on\s+)?[A-Za-z]+$")
_MIN_SLACK = timedelta(days=7)  # people talk about an event in the days after it
_MAX_SLACK = timedelta(days=30)


@dataclass(frozen=True)
class QuestionDates:
    """Events in [after, before) are favoured: the named span widened by a slack."""

    phrases: list[str]
    start: datetime  # the span the question names
    end: datetime
    after: datetime  # with the slack
    before: datetime


def question_dates(query: str, asked_at: datetime | None = None) -> QuestionDates | None:
    anchor = (asked_at or datetime.now(UTC)).astimezone(UTC)
    matches = [m for m in find_dates(query, anchor) if not _BARE_WEEKDAY_RE.match(m.mention.phrase)]
    if not matches:
        return None
    start = min(match.mention.start for match in matches)
    end = max(match.mention.end for match in matches)
    for match in matches:
        first = match.mention.start
        if (later := _RANGE_END_RE.match(query[match.stop :])) and first.day < int(later[1]):
            end = max(end, _same_month(first, int(later[1])) + timedelta(days=1))
        if (earlier := _RANGE_START_RE.search(query[: match.begin])) and int(
            earlier[1]
        ) < first.day:
            start = min(start, _same_month(first, int(earlier[1])))
    slack = min(_MAX_SLACK, max(_MIN_SLACK, (end - start) / 4))
    return QuestionDates(
        phrases=[match.mention.phrase for match in matches],
        start=start,
        end=end,
        after=start - slack,
        before=end + slack,
    )


def _same_month(day: datetime, number: int) -> datetime:
    """Day ``number`` of ``day``'s month (the month's last day if it has fewer)."""
    for candidate in range(number, 27, -1):
        try:
            return day.replace(day=candidate)
        except ValueError:
            continue
    return day.replace(day=min(number, 28))
