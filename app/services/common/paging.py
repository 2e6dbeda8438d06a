"""Opaque keyset cursors for every list endpoint.

A page ends with ``next_cursor``: the sort key of its last row (e.g. created_at and
id), named after the listing it belongs to and written as base64url JSON. The next
page starts strictly after that key, so rows inserted or deleted meanwhile never
shift a page (an offset would repeat or skip rows). A cursor is opaque to callers:
one that does not decode, or belongs to another listing, is a 422 naming
``cursor``. Tampering can only move the position (row-level security still decides
what is visible), so cursors are not signed.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from app.errors import InvalidInput
from app.services.common.inputs import text_problem
from app.services.common.jsonable import utc_text

MAX_LIMIT = 200
MAX_CURSOR_CHARS = 1000

KeyPart = datetime | int | str | UUID
"""What a sort key is made of; ``decode`` is told which type each part has."""


def encode(listing: str, key: Sequence[KeyPart]) -> str:
    """The cursor that continues ``listing`` after the row whose sort key is ``key``."""
    parts = [_part(value) for value in key]
    raw = json.dumps([listing, *parts], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(listing: str, cursor: str, types: Sequence[type]) -> tuple[Any, ...]:
    """The sort key a cursor of ``listing`` holds, each part of the given type."""
    try:
        if len(cursor) > MAX_CURSOR_CHARS:
            raise ValueError("too long")
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw)
        if not isinstance(data, list) or len(data) != len(types) + 1:
            raise ValueError("wrong shape")
        if data[0] != listing:
            raise ValueError(f"a cursor of {data[0]!r}")
        return tuple(_parse(value, kind) for value, kind in zip(data[1:], types, strict=True))
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise invalid_cursor(listing, str(exc)) from None


def before_id(listing: str, cursor: str | None) -> int | None:
    """The id a newest-first listing by id left off at (its rows continue below it);
    None for the first page."""
    return int(decode(listing, cursor, (int,))[0]) if cursor is not None else None


def after_newest(listing: str, cursor: str | None, id_type: type) -> tuple[Any, Any]:
    """(after_at, after_id): the (created_at, id) of the row a newest-first listing left
    off at, its id of ``id_type``; (None, None) for the first page."""
    if cursor is None:
        return None, None
    after_at, after_id = decode(listing, cursor, (datetime, id_type))
    return after_at, after_id


def invalid_cursor(listing: str, why: str) -> InvalidInput:
    message = (
        f"cursor: not a cursor of this listing ({listing}): pass next_cursor from the "
        "previous page unchanged, or leave cursor out for the first page"
    )
    return InvalidInput(
        message, details={"fields": [{"key": "cursor", "message": f"invalid cursor ({why})"}]}
    )


def check_limit(limit: int, high: int = MAX_LIMIT) -> int:
    if not 1 <= limit <= high:
        raise InvalidInput(
            f"limit must be 1-{high}, got {limit}",
            details={"fields": [{"key": "limit", "message": f"must be 1-{high}"}]},
        )
    return limit


def exclusive(cursor: str | None, offset: int) -> None:
    """A page starts at a cursor or at an offset, never both."""
    if cursor is not None and offset:
        raise InvalidInput(
            "cursor: give cursor or offset, not both (a cursor is the next_cursor of the "
            "previous page)",
            details={"fields": [{"key": "cursor", "message": "not with offset"}]},
        )


def _part(value: KeyPart) -> str | int:
    if isinstance(value, datetime):
        return utc_text(value)
    if isinstance(value, UUID):
        return str(value)
    return value


def _parse(value: Any, kind: type) -> Any:
    if kind is datetime:
        if not isinstance(value, str):
            raise ValueError("not a time")
        parsed = datetime.fromisoformat(value)
        if parsed.tzinfo is None:
            raise ValueError("a time without its zone")
        return parsed
    if kind is UUID:
        if not isinstance(value, str):
            raise ValueError("not an id")
        return UUID(value)
    if kind is int:
        if not isinstance(value, int) or isinstance(value, bool) or not -(2**63) <= value < 2**63:
            raise ValueError("not a number")
        return value
    if kind is str:
        if not isinstance(value, str) or text_problem(value) is not None:
            raise ValueError("not a text")
        return value
    raise TypeError(f"unsupported cursor part {kind.__name__}")
