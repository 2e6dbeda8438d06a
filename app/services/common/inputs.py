"""Input rules shared by every request model (REST and MCP): what may reach Postgres.

One place for the rules, so an endpoint cannot forget one and answer 500 where
the caller deserves a 422 saying what to fix:

- text (``Text`` and its variants): no NUL character (PostgreSQL ``text`` and
  ``jsonb`` cannot hold ``\\x00``) and no lone surrogate (``\\ud800``; it has no
  UTF-8 encoding);
- ``NonBlank``: text with something besides whitespace (a blank observation,
  message or name means nothing and cannot be found again);
- ``When``: a date (ISO 8601 or '1:56 pm on 8 May, 2023'), normalised to UTC and
  between 0001-01-02 and 9999-12-30 (UTC): a day inside the years Python and
  psycopg can read back, so an offset (``0001-01-01T00:00:00+14:00``) or a
  day's arithmetic never overflows;
- ``Metadata``: a JSON object at most 16 levels deep and 64 KiB encoded, whose
  keys and strings follow the text rules and whose numbers are finite;
- ``Real``: a finite number stored in a ``real`` (float4) column, rounded to 6
  decimal places: float4 keeps about 7 significant digits, so the rounding loses
  nothing it could store, and values that would underflow it (1e-46) become 0.

Validators raise ``ValueError`` with the problem only; pydantic adds the field's
location, and ``InvalidInput.from_validation`` (app.errors) words both for every adapter.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field

from app.errors import InvalidInput
from app.protocol import JSONObject
from app.services.facts.dates import parse_session_date

MIN_WHEN = datetime(1, 1, 2, tzinfo=UTC)
MAX_WHEN = datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=UTC)
DATE_MAX_CHARS = 100
METADATA_MAX_DEPTH = 16
METADATA_MAX_CHARS = 65_536
REAL_DECIMALS = 6

# ------------------------------------------------------------------ text


def text_problem(value: str) -> str | None:
    """What makes ``value`` impossible to store as PostgreSQL text, or None."""
    if "\x00" in value:
        return "contains a NUL character (\\x00); remove it"
    try:
        value.encode("utf-8")  # in C; only a lone surrogate cannot be encoded
    except UnicodeEncodeError as exc:
        return (
            f"contains a lone surrogate (U+{ord(value[exc.start]):04X}), which has no UTF-8 "
            "encoding; send valid Unicode"
        )
    return None


def check_text(value: str) -> str:
    problem = text_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def check_non_blank(value: str) -> str:
    check_text(value)
    if not value.strip():
        raise ValueError("must not be empty or only whitespace")
    return value


def require_text(field: str, value: str | None) -> str | None:
    """The text rule for a value that reaches a service outside a model (a query
    parameter, an MCP argument): InvalidInput naming ``field``."""
    problem = None if value is None else text_problem(value)
    if problem is not None:
        raise InvalidInput(f"{field}: {problem}")
    return value


# Length limits go before the validator, so pydantic checks them on the string itself
# ("String should have at most 200 characters"). Further limits belong inside the
# Annotated too (``Annotated[str, Field(max_length=4000), TEXT]``): given as a Field on
# an optional field they apply to the union and read "at most 4000 items".
TEXT = AfterValidator(check_text)
NON_BLANK = AfterValidator(check_non_blank)

Text = Annotated[str, TEXT]
"""Any text Postgres can store (may be empty)."""
NonBlank = Annotated[str, Field(min_length=1), NON_BLANK]
"""Storable text with at least one non-whitespace character."""
Name = Annotated[str, Field(min_length=1, max_length=200), NON_BLANK]
"""A short identifier-like text: names, speakers, projects (1-200 characters)."""
Label = Annotated[str, Field(min_length=1, max_length=100), NON_BLANK]
"""A source or similar label (1-100 characters)."""
ShortText = Annotated[str, Field(max_length=200), TEXT]
"""A caller's id or short note, possibly empty (0-200 characters)."""


def check_namespace_label(value: str) -> str:
    check_non_blank(value)
    if "." in value:
        raise ValueError("a namespace label cannot contain '.' (labels are joined by '.')")
    return value


NamespaceLabel = Annotated[
    str, Field(min_length=1, max_length=100), AfterValidator(check_namespace_label)
]
"""One label of a store item's namespace (1-100 characters, no '.'; LangGraph's rule)."""

# ------------------------------------------------------------------ dates


def parse_when(value: Any) -> datetime | None:
    """ISO 8601 or LoCoMo-style ('1:56 pm on 8 May, 2023'), as UTC within MIN_WHEN-MAX_WHEN;
    naive times are UTC."""
    if value is None:
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        parsed = _parse_date_text(value)
    else:
        raise ValueError("must be a date string")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return _within_range(parsed)


def _parse_date_text(value: str) -> datetime:
    if len(value) > DATE_MAX_CHARS:
        raise ValueError(f"a date is at most {DATE_MAX_CHARS} characters")
    check_text(value)
    try:
        parsed = parse_session_date(value)
    except OverflowError:  # the offset moves it past year 1 or 9999
        raise ValueError(_range_message(value)) from None
    if parsed is None:
        raise ValueError(
            f"could not read the date {value!r}: use ISO 8601 (2023-05-08T13:56:00Z) "
            "or a form like '1:56 pm on 8 May, 2023'"
        )
    return parsed


def _within_range(value: datetime) -> datetime:
    try:
        utc = value.astimezone(UTC)
    except OverflowError:
        raise ValueError(_range_message(value.isoformat())) from None
    if not MIN_WHEN <= utc <= MAX_WHEN:
        raise ValueError(_range_message(value.isoformat()))
    return utc


def _range_message(shown: str) -> str:
    return (
        f"the date {shown} is out of range: dates must lie between "
        f"{MIN_WHEN.date().isoformat()} and {MAX_WHEN.date().isoformat()} in UTC"
    )


When = Annotated[datetime, BeforeValidator(parse_when)]
"""A date as ISO 8601 or '1:56 pm on 8 May, 2023', normalised to UTC and range-checked."""


def parse_instant(name: str, value: str | None) -> datetime | None:
    """A date or time sent in a URL (a query parameter, a console form) as parse_when reads
    it; empty means none, anything unreadable is InvalidInput naming the field."""
    if value is None or not value.strip():
        return None
    try:
        return parse_when(value.strip())
    except ValueError as exc:
        raise InvalidInput(f"{name}: {exc}") from None


# ------------------------------------------------------------------ metadata


def check_metadata(value: JSONObject) -> JSONObject:
    """A JSON object Postgres jsonb can hold, bounded in depth and size."""
    for where, depth, item in _walk(value):
        if depth > METADATA_MAX_DEPTH:
            raise ValueError(
                f"is nested more than {METADATA_MAX_DEPTH} levels deep (at {where}); flatten it"
            )
        _check_json_value(where, item)
    size = len(json.dumps(value, ensure_ascii=False))
    if size > METADATA_MAX_CHARS:
        raise ValueError(f"is {size} characters as JSON; the limit is {METADATA_MAX_CHARS}")
    return value


def _walk(root: JSONObject) -> Iterator[tuple[str, int, Any]]:
    """(path, depth, value) of every value and key under ``root``, without recursion (a
    thousand-level object must not exhaust the stack before the depth check sees it)."""
    stack: list[tuple[str, int, Any]] = [("$", 1, root)]
    while stack:
        where, depth, node = stack.pop()
        yield where, depth, node
        if isinstance(node, dict):
            for key, child in node.items():
                if not isinstance(key, str):
                    raise ValueError(f"{where} has a key that is not a string: {key!r}")
                yield f"{where} key {key[:40]!r}", depth, key
                stack.append((f"{where}.{key[:40]}", depth + 1, child))
        elif isinstance(node, list | tuple):
            stack.extend((f"{where}[{i}]", depth + 1, child) for i, child in enumerate(node))


def _check_json_value(where: str, item: Any) -> None:
    if isinstance(item, str):
        problem = text_problem(item)
        if problem is not None:
            raise ValueError(f"{where} {problem}")
    elif isinstance(item, float) and not math.isfinite(item):
        raise ValueError(f"{where} is {item}; JSON numbers must be finite")
    elif not isinstance(item, dict | list | tuple | int | float | bool) and item is not None:
        raise ValueError(f"{where} is a {type(item).__name__}, not a JSON value")


Metadata = Annotated[JSONObject, AfterValidator(check_metadata)]
"""Caller metadata: a JSON object, at most 16 levels deep and 64 KiB, storable text only."""


def too_deep(raw: bytes, limit: int = METADATA_MAX_DEPTH + 1) -> str:
    """What to tell the caller whose JSON body was too deep for the decoder (it raised
    RecursionError before any model saw it): the top-level field holding the first
    object or array nested beyond ``limit`` levels, found by a scan that skips strings."""
    depth, in_string, escaped, start, key = 0, False, False, 0, ""
    for index, byte in enumerate(raw):
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # closing quote: at depth 1 the last string is the key
                in_string = False
                if depth == 1:
                    key = raw[start:index].decode(errors="replace")[:40]
        elif byte == 0x22:
            in_string, start = True, index + 1
        elif byte in b"{[":
            depth += 1
            if depth > limit:
                break
        elif byte in b"}]":
            depth -= 1
    where = f"{key}: " if key else ""
    return (
        f"{where}the JSON is nested too deeply to read; objects (metadata included) may be "
        f"at most {METADATA_MAX_DEPTH} levels deep"
    )


# ------------------------------------------------------------------ numbers


def round_real(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return round(value, REAL_DECIMALS) + 0.0  # + 0.0: no -0.0


Real = Annotated[float, AfterValidator(round_real)]
"""A number for a real (float4) column: finite, rounded to 6 decimal places."""
