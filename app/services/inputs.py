"""Parsing of caller-supplied values shared by the request models."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from app.services.facts.dates import parse_session_date


def parse_when(value: Any) -> datetime | None:
    """ISO 8601 or LoCoMo-style ('1:56 pm on 8 May, 2023'); naive times are UTC."""
    if value is None or isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        parsed = parse_session_date(value)
        if parsed is None:
            raise ValueError(
                f"could not read the date {value!r}: use ISO 8601 (2023-05-08T13:56:00Z) "
                "or a form like '1:56 pm on 8 May, 2023'"
            )
    else:
        raise ValueError("must be a date string")
    if parsed is not None and parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed
