"""One JSON form for every output (API, MCP, CLI): times are RFC 3339 in UTC with ``Z``.

The API's encoder (msgspec) writes a UTC time as ``2026-12-01T15:07:31.123456Z``;
``json.dumps`` callers (the CLI's ``--json``, stored graph properties) use
``utc_text`` and ``default`` from here so they write the same text instead of
Python's ``+00:00``. Input stays lenient (any ISO 8601 form is read).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime
from typing import Any
from uuid import UUID

import msgspec
import pydantic


def utc_text(value: datetime) -> str:
    """RFC 3339 in UTC with ``Z``; a time without a zone is taken as UTC."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def default(value: Any) -> Any:
    """``json.dumps(..., default=default)``: typed results as objects, times as ``utc_text``."""
    if isinstance(value, datetime):
        return utc_text(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump()
    if isinstance(value, msgspec.Struct):  # a typed result whose unset fields are left out
        fields = msgspec.structs.asdict(value)
        return {name: item for name, item in fields.items() if item is not msgspec.UNSET}
    return str(value)
