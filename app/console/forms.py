"""Reading what a console form or link sent: empty means "no filter", and a value that is
not what the field takes is a 422 page that names the field and says what to send."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from app.errors import InvalidInput
from app.services.common.inputs import parse_instant


def blank(value: str | None) -> str | None:
    """A field left empty in the form means no filter."""
    return value.strip() or None if value is not None else None


def choice(name: str, value: str | None, allowed: tuple[str, ...]) -> str | None:
    value = blank(value)
    if value is not None and value not in allowed:
        raise InvalidInput(f"{name}: choose one of {', '.join(allowed)} (got {value!r})")
    return value


def optional_uuid(name: str, value: str | None) -> UUID | None:
    value = blank(value)
    if value is None:
        return None
    try:
        return UUID(value)
    except ValueError:
        raise InvalidInput(f"{name}: {value!r} is not an id (a uuid such as 0f8e…)") from None


def required_uuid(name: str, value: str) -> UUID:
    found = optional_uuid(name, value)
    if found is None:
        raise InvalidInput(f"{name}: give its id (a uuid)")
    return found


def moment(name: str, value: str | None) -> datetime | None:
    """A date or date-time (ISO 8601, or what a datetime-local input sends; UTC unless it
    names a zone); empty or "now" means none."""
    return None if blank(value) == "now" else parse_instant(name, value)
