"""Date phrases in text, resolved to absolute spans against an anchor.

Conversations say "yesterday" and "last week"; stored facts must say "7 May 2023", or
they rot the moment the session ends. This module finds absolute and relative date
phrases and turns each into a half-open span [start, end) of days in the anchor's
timezone: one day, a weekend (Sat-Sun), a week (Mon-Sun), a month, a season or a year.
Pure regexes and calendar arithmetic, so it is deterministic and fast enough to run on
every turn of a benchmark.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import MAXYEAR, MINYEAR, UTC, datetime, timedelta, tzinfo
from typing import NamedTuple

from app.services.common.numbers import alternation, spelled

MONTH_NAMES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
WEEKDAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

_MONTHS: dict[str, int] = {}
for _i, _name in enumerate(MONTH_NAMES, start=1):
    _MONTHS[_name.lower()] = _i
    _MONTHS[_name[:3].lower()] = _i
_MONTHS["sept"] = 9

# Month names are matched case-insensitively except "May", which is also a modal verb.
_MONTH = (
    r"(?:(?i:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|june?|july?|aug(?:ust)?"
    r"|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)|May)"
)
# Month-only phrases ("in June") carry no number to confirm them, so they must be capitalised.
_MONTH_CAP = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
)
# Full names and the abbreviations nobody mistakes for a word ("Tues", "Thurs", "Weds");
# "Mon", "Wed", "Sat" and "Sun" are also words, so _SHORT_WEEKDAY_RE asks for more.
_WEEKDAY = (
    r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tues?|thu(?:rs?)?|weds|fri)"
)
_WEEKDAY_ABBREVIATIONS = {
    "mon": 0,
    "tue": 1,
    "tues": 1,
    "wed": 2,
    "weds": 2,
    "thu": 3,
    "thur": 3,
    "thurs": 3,
    "fri": 4,
    "sat": 5,
    "sun": 6,
}
_SEASON = r"(?:spring|summer|fall|autumn|winter)"
# The counts "N days ago" reads spelled out: one to twelve, fifteen, twenty and thirty
# (the rest only in digits), with "a"/"an" for one and the vague counts below.
_COUNT_WORDS = spelled([*range(1, 13), 15, 20, 30])
_NUMBER_WORDS: dict[str, int] = {
    "a": 1,
    "an": 1,
    **_COUNT_WORDS,
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
    "a few": 3,
    "few": 3,
    "several": 3,
}
_APPROXIMATE = ("few", "couple", "several", "other day")
_NUMBER = (
    r"(?:\d{1,3}|a\s+couple(?:\s+of)?|couple\s+of|a\s+few|few|several|an?"
    rf"|{alternation(_COUNT_WORDS)})"
)
_DAYPART = r"(?:\s+(?:morning|afternoon|evening|night))?"
_YEAR = r"(?:19|20)\d{2}"

_ISO_RE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_DMY_RE = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?\s+({_MONTH})\b\.?(?:,?\s+({_YEAR})\b)?"
)
_MDY_RE = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?!:)(?:,?\s+({_YEAR})\b)?")
_MONTH_YEAR_RE = re.compile(rf"\b({_MONTH})\.?,?\s+({_YEAR})\b")
_YEAR_RE = re.compile(
    rf"\b(?i:in|since|during|by|until|before|after|from|of|back\s+in|early|late)\s+({_YEAR})\b"
    r"(?![-/:]\d)"
)
_MONTH_ONLY_RE = re.compile(
    rf"\b(?i:in|during|since|until|by|early|late|mid-?|through)\s*({_MONTH_CAP})\b(?!\s+\d)"
)
_RELATIVE_MONTH_RE = re.compile(rf"\b(?i:(last|next|this|coming))\s+({_MONTH_CAP})\b(?!\s+\d)")
_DAY_WORD_RE = re.compile(
    rf"\b(?:the\s+day\s+before\s+yesterday|the\s+day\s+after\s+tomorrow|yesterday{_DAYPART}"
    rf"|tomorrow{_DAYPART}|today|tonight|last\s+night|this\s+(?:morning|afternoon|evening)"
    r"|the\s+other\s+day|earlier\s+today)\b",
    re.IGNORECASE,
)
_PERIOD_RE = re.compile(
    r"(?<!\bthe\s)\b(?:(earlier|later)\s+)?(this|last|next|previous|coming|this\s+past|over\s+the)\s+"
    r"(week|weekend|month|year)\b",
    re.IGNORECASE,
)
_AGO_RE = re.compile(
    rf"\b({_NUMBER})\s+(day|week|month|year)s?\s+(ago|from\s+now)\b",
    re.IGNORECASE,
)
_WEEKDAY_RE = re.compile(
    rf"\b(?:(on|last|next|this|this\s+past|past|coming)\s+)?({_WEEKDAY})\b{_DAYPART}(?!s)",
    re.IGNORECASE,
)
_SHORT_WEEKDAY_RE = re.compile(
    r"\b(?i:(on|last|next|this|this\s+past|past|coming))\s+(Mon|Wed|Sat|Sun)\b"
    rf"(?i:{_DAYPART})"
)
_SEASON_RE = re.compile(
    rf"\b(this|last|next|this\s+past|coming)\s+({_SEASON})\b(?!\s+(?:of\s+)?{_YEAR})",
    re.IGNORECASE,
)
_SEASON_YEAR_RE = re.compile(
    rf"\b({_SEASON})\s+(?:of\s+)?({_YEAR})\b",
    re.IGNORECASE,
)
_SEASON_START = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}
_SEASON_NAMES = {3: "spring", 6: "summer", 9: "autumn", 12: "winter"}

_SESSION_TIME_RE = re.compile(
    r"^\s*(\d{1,2})[:.](\d{2})\s*([ap])\.?\s*m\.?\s*(?:on\s+|,\s*)?(.+?)\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class DateMention:
    """A date phrase and the span it denotes: start inclusive, end exclusive.

    relative is True when the span depends on the anchor ("yesterday", "in June").
    """

    phrase: str
    start: datetime
    end: datetime
    relative: bool


class DateMatch(NamedTuple):
    """A mention with its character offsets in the text, for rewriting the phrase."""

    begin: int
    stop: int
    mention: DateMention


# --- calendar arithmetic ---------------------------------------------------------------


def _midnight(value: datetime) -> datetime:
    return value.replace(hour=0, minute=0, second=0, microsecond=0)


def _day(year: int, month: int, day: int, tz: tzinfo | None) -> datetime | None:
    try:
        return datetime(year, month, day, tzinfo=tz)
    except ValueError:
        return None


def _add_months(value: datetime, months: int) -> datetime:
    """First day of the month `months` after value's month."""
    index = value.year * 12 + value.month - 1 + months
    return value.replace(year=index // 12, month=index % 12 + 1, day=1)


def _day_span(day: datetime) -> tuple[datetime, datetime]:
    return day, day + timedelta(days=1)


def _week_span(day: datetime) -> tuple[datetime, datetime]:
    monday = day - timedelta(days=day.weekday())
    return monday, monday + timedelta(days=7)


def _month_span(day: datetime) -> tuple[datetime, datetime]:
    first = day.replace(day=1)
    return first, _add_months(first, 1)


def _year_span(year: int, tz: tzinfo | None) -> tuple[datetime, datetime]:
    return datetime(year, 1, 1, tzinfo=tz), datetime(year + 1, 1, 1, tzinfo=tz)


def _weekend_span(saturday: datetime) -> tuple[datetime, datetime]:
    return saturday, saturday + timedelta(days=2)


def _season_span(season: str, year: int, tz: tzinfo | None) -> tuple[datetime, datetime]:
    start = datetime(year, _SEASON_START[season], 1, tzinfo=tz)
    return start, _add_months(start, 3)


def weekday_index(word: str) -> int:
    """Monday = 0, from a full name or an abbreviation ('Tues', 'Thurs', 'Weds')."""
    lower = word.lower()
    if lower in WEEKDAY_NAMES:
        return WEEKDAY_NAMES.index(lower)
    return _WEEKDAY_ABBREVIATIONS[lower]


def _number(word: str) -> int | None:
    word = re.sub(r"\s+", " ", word.lower())
    if word.isdigit():
        return int(word)
    return _NUMBER_WORDS.get(word)


# --- resolvers: each takes a match and the anchor's midnight, returns a span or None -----

_Span = tuple[datetime, datetime]


def _resolve_iso(m: re.Match[str], today: datetime | None, tz: tzinfo | None) -> _Span | None:
    day = _day(int(m[1]), int(m[2]), int(m[3]), tz)
    return _day_span(day) if day else None


def _resolve_day_month(
    day_str: str, month_str: str, year_str: str | None, today: datetime | None, tz: tzinfo | None
) -> _Span | None:
    month = _MONTHS.get(month_str.lower().rstrip("."))
    if month is None:
        return None
    if year_str:
        year = int(year_str)
    elif today is not None:
        year = today.year
    else:
        return None
    day = _day(year, month, int(day_str), tz)
    return _day_span(day) if day else None


def _resolve_dmy(m: re.Match[str], today: datetime | None, tz: tzinfo | None) -> _Span | None:
    return _resolve_day_month(m[1], m[2], m[3], today, tz)


def _resolve_mdy(m: re.Match[str], today: datetime | None, tz: tzinfo | None) -> _Span | None:
    return _resolve_day_month(m[2], m[1], m[3], today, tz)


def _resolve_month_year(
    m: re.Match[str], today: datetime | None, tz: tzinfo | None
) -> _Span | None:
    month = _MONTHS.get(m[1].lower().rstrip("."))
    if month is None:
        return None
    return _month_span(datetime(int(m[2]), month, 1, tzinfo=tz))


def _resolve_year(m: re.Match[str], today: datetime | None, tz: tzinfo | None) -> _Span | None:
    return _year_span(int(m[1]), tz)


def _resolve_month_only(
    m: re.Match[str], today: datetime | None, tz: tzinfo | None
) -> _Span | None:
    if today is None:
        return None
    return _month_span(today.replace(month=_MONTHS[m[1].lower()], day=1))


def _resolve_relative_month(
    m: re.Match[str], today: datetime | None, tz: tzinfo | None
) -> _Span | None:
    if today is None:
        return None
    which, month = m[1].lower(), _MONTHS[m[2].lower()]
    candidate = today.replace(month=month, day=1)
    if which == "last" and candidate >= today.replace(day=1):
        candidate = candidate.replace(year=candidate.year - 1)
    elif which in ("next", "coming") and candidate <= today.replace(day=1):
        candidate = candidate.replace(year=candidate.year + 1)
    return _month_span(candidate)


def _resolve_day_word(m: re.Match[str], today: datetime | None, tz: tzinfo | None) -> _Span | None:
    if today is None:
        return None
    phrase = " ".join(m[0].lower().split())
    if phrase.startswith("the day before"):
        offset = -2
    elif phrase.startswith("the day after"):
        offset = 2
    elif phrase.startswith(("yesterday", "last night")):
        offset = -1
    elif phrase.startswith("tomorrow"):
        offset = 1
    elif phrase == "the other day":
        offset = -2
    else:
        offset = 0
    return _day_span(today + timedelta(days=offset))


def _resolve_period(m: re.Match[str], today: datetime | None, tz: tzinfo | None) -> _Span | None:
    if today is None:
        return None
    which = " ".join(m[2].lower().split())
    unit = m[3].lower()
    step = {"last": -1, "previous": -1, "next": 1, "coming": 1}.get(which, 0)
    if unit == "week":
        return _week_span(today + timedelta(days=7 * step))
    if unit == "month":
        return _month_span(_add_months(today, step))
    if unit == "year":
        return _year_span(today.year + step, tz)
    # weekend: Saturday-Sunday
    this_saturday = today - timedelta(days=today.weekday()) + timedelta(days=5)
    if which in ("this past", "over the"):  # the most recent weekend that has begun
        saturday = this_saturday if today >= this_saturday else this_saturday - timedelta(7)
    elif step < 0:
        saturday = this_saturday - timedelta(days=7)
    elif step > 0:  # the first weekend that starts after today
        saturday = this_saturday if today < this_saturday else this_saturday + timedelta(7)
    else:
        saturday = this_saturday
    return _weekend_span(saturday)


def _resolve_ago(m: re.Match[str], today: datetime | None, tz: tzinfo | None) -> _Span | None:
    if today is None:
        return None
    count = _number(m[1])
    if count is None:
        return None
    sign = -1 if m[3].lower() == "ago" else 1
    unit = m[2].lower()
    if unit == "day":
        return _day_span(today + timedelta(days=sign * count))
    if unit == "week":
        return _week_span(today + timedelta(days=sign * 7 * count))
    if unit == "month":
        return _month_span(_add_months(today, sign * count))
    return _year_span(today.year + sign * count, tz)


def _resolve_weekday(m: re.Match[str], today: datetime | None, tz: tzinfo | None) -> _Span | None:
    if today is None:
        return None
    which = " ".join((m[1] or "on").lower().split())
    target = weekday_index(m[2])
    back = (today.weekday() - target) % 7  # days since the most recent such day, 0 = today
    forward = (target - today.weekday()) % 7
    if which in ("last", "past", "this past"):
        day = today - timedelta(days=back or 7)
    elif which in ("next", "coming"):
        day = today + timedelta(days=forward or 7)
    elif which == "this":
        day = today - timedelta(days=today.weekday()) + timedelta(days=target)
    else:  # "on Monday": past-tense conversation, so the most recent one on or before today
        day = today - timedelta(days=back)
    return _day_span(day)


def _resolve_season(m: re.Match[str], today: datetime | None, tz: tzinfo | None) -> _Span | None:
    if today is None:
        return None
    which = " ".join(m[1].lower().split())
    season = m[2].lower()
    # the occurrence containing today, or else the one starting in today's year
    year = today.year - 1 if season == "winter" and today.month < 3 else today.year
    start, end = _season_span(season, year, tz)
    if which in ("last", "this past"):
        while end > today:
            year -= 1
            start, end = _season_span(season, year, tz)
    elif which in ("next", "coming"):
        while start <= today:
            year += 1
            start, end = _season_span(season, year, tz)
    return start, end


def _resolve_season_year(
    m: re.Match[str], today: datetime | None, tz: tzinfo | None
) -> _Span | None:
    return _season_span(m[1].lower(), int(m[2]), tz)


_Resolver = Callable[[re.Match[str], datetime | None, tzinfo | None], _Span | None]

# (pattern, resolver, relative); on overlap the longer match wins, then the earlier rule.
_RULES: tuple[tuple[re.Pattern[str], _Resolver, bool], ...] = (
    (_ISO_RE, _resolve_iso, False),
    (_DMY_RE, _resolve_dmy, False),
    (_MDY_RE, _resolve_mdy, False),
    (_MONTH_YEAR_RE, _resolve_month_year, False),
    (_SEASON_YEAR_RE, _resolve_season_year, False),
    (_YEAR_RE, _resolve_year, False),
    (_DAY_WORD_RE, _resolve_day_word, True),
    (_PERIOD_RE, _resolve_period, True),
    (_AGO_RE, _resolve_ago, True),
    (_WEEKDAY_RE, _resolve_weekday, True),
    (_SHORT_WEEKDAY_RE, _resolve_weekday, True),
    (_SEASON_RE, _resolve_season, True),
    (_RELATIVE_MONTH_RE, _resolve_relative_month, True),
    (_MONTH_ONLY_RE, _resolve_month_only, True),
)
_EXPLICIT_YEAR_RE = re.compile(rf"\b{_YEAR}\b|\d{{4}}-\d")


def _within_calendar(
    resolve: _Resolver, m: re.Match[str], today: datetime | None, tz: tzinfo | None
) -> _Span | None:
    """The span, or None when it leaves Python's calendar (years 1-9999): 'tomorrow'
    said on 31 December 9999 or '9999-12-31' (whose end is a day later) has no span."""
    try:
        return resolve(m, today, tz)
    except (OverflowError, ValueError):
        return None


def storable(value: datetime | None) -> datetime | None:
    """value in UTC when it lies safely inside years 1-9999, else None (no date).

    Postgres keeps times beyond either edge, Python cannot read them back: a date an
    offset like +14:00, or the session time zone, pushes over an edge would be written
    and then break every read, so a date within a year of an edge is dropped.
    """
    if value is None:
        return None
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    try:
        utc = aware.astimezone(UTC)
    except OverflowError:
        return None
    return utc if MINYEAR < utc.year < MAXYEAR else None


def find_dates(text: str, anchor: datetime | None) -> list[DateMatch]:
    """Every date phrase in text with its offsets, in textual order, without overlaps.

    Without an anchor only phrases that name their year can be resolved.
    """
    tz = anchor.tzinfo if anchor is not None else None
    today = _midnight(anchor) if anchor is not None else None
    candidates: list[tuple[int, int, int, DateMention]] = []
    for order, (pattern, resolve, relative) in enumerate(_RULES):
        for m in pattern.finditer(text):
            span = _within_calendar(resolve, m, today, tz)
            if span is None:
                continue
            phrase = m[0].strip()
            # a day-month without a year borrows the anchor's year, so it is anchor-relative
            is_relative = relative or (
                resolve in (_resolve_dmy, _resolve_mdy) and not _EXPLICIT_YEAR_RE.search(phrase)
            )
            mention = DateMention(phrase, span[0], span[1], is_relative)
            candidates.append((m.start(), m.end(), order, mention))
    candidates.sort(key=lambda c: (-(c[1] - c[0]), c[2], c[0]))
    taken: list[DateMatch] = []
    for begin, stop, _order, mention in candidates:
        if all(stop <= t.begin or begin >= t.stop for t in taken):
            taken.append(DateMatch(begin, stop, mention))
    taken.sort(key=lambda t: t.begin)
    return taken


def resolve_dates(text: str, anchor: datetime | None) -> list[DateMention]:
    """The date phrases of text resolved to spans in the anchor's timezone."""
    return [match.mention for match in find_dates(text, anchor)]


def count_dates(text: str) -> int:
    """How many date phrases text contains, resolvable or not (for scoring)."""
    return len(find_dates(text, datetime(2000, 1, 1, tzinfo=UTC)))


# --- rendering ---------------------------------------------------------------------------


def format_day(value: datetime) -> str:
    """'7 May 2023': the form LoCoMo answers and humans both read."""
    return f"{value.day} {MONTH_NAMES[value.month - 1]} {value.year}"


def describe_span(start: datetime, end: datetime) -> str:
    """The span in words: '7 May 2023', 'the week of 1 May 2023', 'May 2023', '2022'."""
    days = (end - start).days
    if days <= 1:
        return format_day(start)
    if days == 2 and start.weekday() == 5:
        return f"the weekend of {format_day(start)}"
    if days == 7 and start.weekday() == 0:
        return f"the week of {format_day(start)}"
    if start.day == 1 and _add_months(start, 1) == end:
        return f"{MONTH_NAMES[start.month - 1]} {start.year}"
    if start.day == 1 and start.month in _SEASON_NAMES and _add_months(start, 3) == end:
        season = _SEASON_NAMES[start.month]
        if start.month == 12:
            return f"winter {start.year}-{start.year + 1}"
        return f"{season} {start.year}"
    if start.day == 1 and start.month == 1 and end == start.replace(year=start.year + 1):
        return str(start.year)
    return f"{format_day(start)} to {format_day(end - timedelta(days=1))}"


def render_mention(mention: DateMention) -> str:
    """The mention as an absolute phrase with its preposition: 'on 7 May 2023'."""
    words = describe_span(mention.start, mention.end)
    lowered = mention.phrase.lower()
    if any(cue in lowered for cue in _APPROXIMATE):
        return f"around {words}"
    days = (mention.end - mention.start).days
    if days <= 1 or (days == 2 and mention.start.weekday() == 5):
        return f"on {words}"
    if days == 7:
        return f"during {words}"
    return f"in {words}"


# --- session timestamps ------------------------------------------------------------------


def _as_utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _parse_date_only(text: str) -> datetime | None:
    text = text.strip()
    for pattern, resolve in (
        (_ISO_RE, _resolve_iso),
        (_DMY_RE, _resolve_dmy),
        (_MDY_RE, _resolve_mdy),
    ):
        m = pattern.fullmatch(text.rstrip("."))
        if m and m.lastindex is not None and m[m.lastindex]:
            span = resolve(m, None, UTC)
            if span is not None:
                return span[0]
    return None


def parse_session_date(value: str) -> datetime | None:
    """A conversation timestamp as an aware UTC datetime, or None when unreadable.

    Reads LoCoMo's '1:56 pm on 8 May, 2023', ISO 8601 and plain dates like '8 May 2023';
    naive values are taken to be UTC.
    """
    text = value.strip()
    if not text:
        return None
    try:
        return _as_utc(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        pass
    m = _SESSION_TIME_RE.match(text)
    if m:
        day = _parse_date_only(m[4])
        hour, minute = int(m[1]), int(m[2])
        if day is None or not (1 <= hour <= 12 and minute < 60):
            return None
        hour = hour % 12 + (12 if m[3].lower() == "p" else 0)
        return day.replace(hour=hour, minute=minute)
    return _parse_date_only(text)
