"""JSON to the result dataclasses, by their type hints, tolerant of what the server adds.

Unknown fields are dropped (a newer server may add fields), a missing field with a
default takes it, a missing optional one is None; anything else that does not fit is
an ``InvalidResponse`` naming the path, so a client/server mismatch is told, not
silently carried. ``Literal`` values are not checked: a server may add a status.
"""

from __future__ import annotations

import dataclasses
import types
from datetime import date, datetime
from functools import cache
from typing import Any, Literal, TypeVar, Union, cast, get_args, get_origin, get_type_hints

from elephant_client._errors import InvalidResponse
from elephant_client._models import Job, JobsPage, Page

T = TypeVar("T")
P = TypeVar("P", bound=Page[Any])
_MISSING = object()


def decode(cls: type[T], data: Any) -> T:
    """``data`` (parsed JSON) as an instance of ``cls`` (a dataclass or a type hint)."""
    return cast(T, _value(cls, data, "$"))


def decode_page(item: type[T], data: Any) -> Page[T]:
    """A list endpoint's answer (``{"items": [...], "next_cursor": ...}``), items as ``item``."""
    return _page(Page, item, data)


def decode_jobs(data: Any) -> JobsPage:
    """GET /jobs: a page of jobs with the tenant's counts."""
    return _page(JobsPage, Job, data)


def _page(page: type[P], item: type[Any], data: Any) -> P:
    if not isinstance(data, dict):
        raise _mismatch("$", "an object", data)
    items = data.get("items")
    if not isinstance(items, list):
        raise _mismatch("$.items", "a list", items)
    rest = _dataclass(page, {**data, "items": []}, "$")
    decoded = [_value(item, value, f"$.items[{i}]") for i, value in enumerate(items)]
    return cast(P, dataclasses.replace(rest, items=decoded))


@cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def _dataclass(cls: type, data: Any, path: str) -> Any:
    if not isinstance(data, dict):
        raise _mismatch(path, "an object", data)
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        hint = hints[field.name]
        raw = data.get(field.name, _MISSING)
        if raw is _MISSING:
            if field.default is not dataclasses.MISSING or (
                field.default_factory is not dataclasses.MISSING
            ):
                continue
            if _optional(hint):
                values[field.name] = None
                continue
            raise InvalidResponse(f"the response has no field {path}.{field.name}")
        values[field.name] = _value(hint, raw, f"{path}.{field.name}")
    return cls(**values)


def _value(hint: Any, data: Any, path: str) -> Any:
    if hint is Any or hint is object:
        return data
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return _union(get_args(hint), data, path)
    if origin is Literal:
        return data
    if origin is list:
        if not isinstance(data, list):
            raise _mismatch(path, "a list", data)
        (item,) = get_args(hint)
        return [_value(item, value, f"{path}[{i}]") for i, value in enumerate(data)]
    if origin is dict:
        if not isinstance(data, dict):
            raise _mismatch(path, "an object", data)
        _, item = get_args(hint)
        return {str(key): _value(item, value, f"{path}.{key}") for key, value in data.items()}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _dataclass(hint, data, path)
    if hint is datetime:
        return _datetime(data, path)
    if hint is date:
        return _date(data, path)
    if hint is float:
        if isinstance(data, (int, float)) and not isinstance(data, bool):
            return float(data)
        raise _mismatch(path, "a number", data)
    if hint is int:
        if isinstance(data, int) and not isinstance(data, bool):
            return data
        raise _mismatch(path, "an integer", data)
    if hint in (str, bool):
        if isinstance(data, hint):
            return data
        raise _mismatch(path, "a string" if hint is str else "a boolean", data)
    raise TypeError(f"elephant_client cannot decode {hint!r} at {path}")  # a bug in the models


def _union(options: tuple[Any, ...], data: Any, path: str) -> Any:
    if data is None and type(None) in options:
        return None
    errors = []
    for option in options:
        if option is type(None):
            continue
        try:
            return _value(option, data, path)
        except InvalidResponse as exc:
            errors.append(str(exc))
    raise InvalidResponse("; ".join(errors))


def _datetime(data: Any, path: str) -> datetime:
    if not isinstance(data, str):
        raise _mismatch(path, "an RFC 3339 date", data)
    try:
        return datetime.fromisoformat(data)
    except ValueError:
        raise _mismatch(path, "an RFC 3339 date", data) from None


def _date(data: Any, path: str) -> date:
    if not isinstance(data, str):
        raise _mismatch(path, "an ISO 8601 day", data)
    try:
        return date.fromisoformat(data)
    except ValueError:
        raise _mismatch(path, "an ISO 8601 day", data) from None


def _optional(hint: Any) -> bool:
    return get_origin(hint) in (Union, types.UnionType) and type(None) in get_args(hint)


def _mismatch(path: str, expected: str, data: Any) -> InvalidResponse:
    shown = repr(data)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return InvalidResponse(f"the response's {path} should be {expected}, got {shown}")
