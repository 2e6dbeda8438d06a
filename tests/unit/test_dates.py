"""Date phrases resolved against a session anchor, and session timestamps parsed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from app.services.facts.dates import (
    DateMention,
    count_dates,
    describe_span,
    find_dates,
    parse_session_date,
    render_mention,
    resolve_dates,
    storable,
)

# LoCoMo's first session: Monday 8 May 2023, 13:56 UTC.
ANCHOR = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


def only(text: str, anchor: datetime | None = ANCHOR) -> DateMention:
    mentions = resolve_dates(text, anchor)
    assert len(mentions) == 1, mentions
    return mentions[0]


@pytest.mark.parametrize(
    ("text", "phrase", "start", "days"),
    [
        ("I went yesterday", "yesterday", day(2023, 5, 7), 1),
        ("we met last night", "last night", day(2023, 5, 7), 1),
        ("today is busy", "today", day(2023, 5, 8), 1),
        ("out tonight", "tonight", day(2023, 5, 8), 1),
        ("ran this morning", "this morning", day(2023, 5, 8), 1),
        ("see you tomorrow", "tomorrow", day(2023, 5, 9), 1),
        ("busy this week", "this week", day(2023, 5, 8), 7),
        ("it happened last week", "last week", day(2023, 5, 1), 7),
        ("starting next week", "next week", day(2023, 5, 15), 7),
        ("moved last month", "last month", day(2023, 4, 1), 30),
        ("camping next month", "next month", day(2023, 6, 1), 30),
        ("painted last year", "last year", day(2022, 1, 1), 365),
        ("goals this year", "this year", day(2023, 1, 1), 365),
        ("3 days ago I fell", "3 days ago", day(2023, 5, 5), 1),
        ("two weeks ago", "two weeks ago", day(2023, 4, 24), 7),
        ("a month ago", "a month ago", day(2023, 4, 1), 30),
        ("moved 4 years ago", "4 years ago", day(2019, 1, 1), 365),
        ("a few days ago", "a few days ago", day(2023, 5, 5), 1),
        ("saw him the other day", "the other day", day(2023, 5, 6), 1),
        ("hiked last weekend", "last weekend", day(2023, 5, 6), 2),
        ("party next weekend", "next weekend", day(2023, 5, 13), 2),
        ("raced last Friday", "last Friday", day(2023, 5, 5), 1),
        ("dinner next Friday", "next Friday", day(2023, 5, 12), 1),
        ("met her on Saturday", "on Saturday", day(2023, 5, 6), 1),
        ("went there on Monday", "on Monday", day(2023, 5, 8), 1),
        ("going in June", "in June", day(2023, 6, 1), 30),
        ("visited last summer", "last summer", day(2022, 6, 1), 92),
    ],
)
def test_relative_phrases_resolve_against_the_anchor(
    text: str, phrase: str, start: datetime, days: int
) -> None:
    mention = only(text)
    assert mention.phrase == phrase
    assert mention.relative
    assert mention.start == start
    assert mention.end - mention.start == timedelta(days=days)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("on 8 May 2023", day(2023, 5, 8), day(2023, 5, 9)),
        ("on 8th May, 2023", day(2023, 5, 8), day(2023, 5, 9)),
        ("on May 8, 2023", day(2023, 5, 8), day(2023, 5, 9)),
        ("released 2023-05-08", day(2023, 5, 8), day(2023, 5, 9)),
        ("back in May 2023", day(2023, 5, 1), day(2023, 6, 1)),
        ("it was in 2022", day(2022, 1, 1), day(2023, 1, 1)),
        ("here since 2019", day(2019, 1, 1), day(2020, 1, 1)),
        ("the summer of 2021", day(2021, 6, 1), day(2021, 9, 1)),
    ],
)
def test_absolute_dates(text: str, start: datetime, end: datetime) -> None:
    mention = only(text)
    assert not mention.relative
    assert (mention.start, mention.end) == (start, end)


def test_absolute_dates_need_no_anchor_and_relative_ones_do() -> None:
    mentions = resolve_dates("yesterday, not on 8 May 2023", None)
    assert mentions == [
        DateMention("8 May 2023", datetime(2023, 5, 8), datetime(2023, 5, 9), False)
    ]


def test_several_mentions_in_text_order_without_overlaps() -> None:
    mentions = resolve_dates("Last week I booked a flight for next Friday, 19 May 2023.", ANCHOR)
    assert [m.phrase for m in mentions] == ["Last week", "next Friday", "19 May 2023"]
    matches = find_dates("Last week I booked it", ANCHOR)
    assert (matches[0].begin, matches[0].stop) == (0, 9)


def test_the_anchor_timezone_is_kept() -> None:
    tz = timezone(timedelta(hours=-5))
    anchor = datetime(2023, 5, 8, 23, 30, tzinfo=tz)
    mention = only("yesterday", anchor)
    assert mention.start == datetime(2023, 5, 7, tzinfo=tz)
    assert mention.start.tzinfo is tz


@pytest.mark.parametrize(
    "text",
    [
        "You may go now",
        "Postgres 18 is out",
        "I have 2 dogs",
        "Mondays are hard",
        "the 10,000 steps",
    ],
)
def test_no_false_dates(text: str) -> None:
    assert resolve_dates(text, ANCHOR) == []


def test_yearless_day_month_borrows_the_anchor_year() -> None:
    mention = only("her birthday is on 14 March")
    assert mention.start == day(2023, 3, 14)
    assert mention.relative


def test_count_dates_sees_relative_phrases_without_an_anchor() -> None:
    assert count_dates("yesterday and on 14 March") == 2
    assert count_dates("no dates here") == 0


def test_describe_and_render() -> None:
    assert describe_span(day(2023, 5, 7), day(2023, 5, 8)) == "7 May 2023"
    assert describe_span(day(2023, 5, 1), day(2023, 5, 8)) == "the week of 1 May 2023"
    assert describe_span(day(2023, 4, 1), day(2023, 5, 1)) == "April 2023"
    assert describe_span(day(2022, 1, 1), day(2023, 1, 1)) == "2022"
    assert render_mention(only("yesterday")) == "on 7 May 2023"
    assert render_mention(only("last month")) == "in April 2023"
    assert render_mention(only("a few days ago")) == "around 5 May 2023"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("7:55 pm on 9 June, 2023", datetime(2023, 6, 9, 19, 55, tzinfo=UTC)),
        ("12:05 am on 1 January, 2024", datetime(2024, 1, 1, 0, 5, tzinfo=UTC)),
        ("10:04 am on 19 December, 2023", datetime(2023, 12, 19, 10, 4, tzinfo=UTC)),
        ("2023-05-08T10:00:00Z", datetime(2023, 5, 8, 10, tzinfo=UTC)),
        ("2023-05-08T12:00:00+02:00", datetime(2023, 5, 8, 10, tzinfo=UTC)),
        ("2023-05-08 10:00", datetime(2023, 5, 8, 10, tzinfo=UTC)),
        ("8 May 2023", datetime(2023, 5, 8, tzinfo=UTC)),
        ("May 8, 2023", datetime(2023, 5, 8, tzinfo=UTC)),
    ],
)
def test_parse_session_date(value: str, expected: datetime) -> None:
    parsed = parse_session_date(value)
    assert parsed == expected
    assert parsed is not None and parsed.tzinfo is not None
    assert parsed.utcoffset() == timedelta(0)


@pytest.mark.parametrize("value", ["", "garbage", "13:99 pm on 8 May, 2023", "31 February 2023"])
def test_parse_session_date_rejects_nonsense(value: str) -> None:
    assert parse_session_date(value) is None


@pytest.mark.parametrize(
    ("text", "phrase", "start"),
    [
        ("we hiked last Tues", "last Tues", day(2023, 5, 2)),
        ("dinner next Thurs", "next Thurs", day(2023, 5, 11)),
        ("met her on Weds", "on Weds", day(2023, 5, 3)),
        ("call on Tue", "on Tue", day(2023, 5, 2)),
        ("party last Fri", "last Fri", day(2023, 5, 5)),
        ("Thu morning was slow", "Thu morning", day(2023, 5, 4)),
        ("ran last Sat", "last Sat", day(2023, 5, 6)),
        ("see you next Mon", "next Mon", day(2023, 5, 15)),
        ("went there on Sun", "on Sun", day(2023, 5, 7)),
    ],
)
def test_abbreviated_weekdays_resolve_like_full_names(
    text: str, phrase: str, start: datetime
) -> None:
    mention = only(text)
    assert (mention.phrase, mention.start, mention.relative) == (phrase, start, True)
    assert mention.end - mention.start == timedelta(days=1)


@pytest.mark.parametrize(
    "text",
    ["I sat down", "the sun is out", "we lay on sun loungers", "Sat on the bench", "Thursdays"],
)
def test_weekday_abbreviations_that_are_words_need_a_cue(text: str) -> None:
    assert resolve_dates(text, ANCHOR) == []


@pytest.mark.parametrize(
    ("text", "anchor"),
    [
        ("see you tomorrow", datetime(9999, 12, 31, 12, tzinfo=UTC)),
        ("today", datetime(9999, 12, 31, tzinfo=UTC)),
        ("next year", datetime(9999, 6, 1, tzinfo=UTC)),
        ("next month", datetime(9999, 12, 5, tzinfo=UTC)),
        ("next week", datetime(9999, 12, 28, tzinfo=timezone(timedelta(hours=14)))),
        ("yesterday", datetime(1, 1, 1, 5, tzinfo=timezone(timedelta(hours=14)))),
        ("last Tuesday", datetime(1, 1, 2, tzinfo=UTC)),  # 1 January 1 was a Monday
        ("the vault opens on 9999-12-31", ANCHOR),
        ("999 years from now", datetime(9500, 1, 1, tzinfo=UTC)),
        ("999 years ago", datetime(500, 1, 1, tzinfo=UTC)),
    ],
)
def test_dates_beyond_the_calendar_resolve_to_nothing(text: str, anchor: datetime) -> None:
    assert resolve_dates(text, anchor) == []
    assert count_dates(text) in (0, 1)  # never an OverflowError


def test_storable_keeps_safe_dates_in_utc_and_drops_the_edges() -> None:
    plus14 = timezone(timedelta(hours=14))
    assert storable(datetime(2023, 5, 8, 2, tzinfo=plus14)) == datetime(2023, 5, 7, 12, tzinfo=UTC)
    assert storable(datetime(2023, 5, 8)) == day(2023, 5, 8)  # naive is UTC
    assert storable(None) is None
    assert storable(datetime(1, 1, 1, 5, tzinfo=plus14)) is None  # before year 1 in UTC
    assert storable(datetime(1, 6, 1, tzinfo=UTC)) is None
    assert storable(datetime(9999, 12, 31, tzinfo=UTC)) is None
    assert storable(datetime(9998, 12, 31, tzinfo=UTC)) == day(9998, 12, 31)
