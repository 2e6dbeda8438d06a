"""What every settings section shares: the frozen, closed base model and value helpers.

``_Section`` is the base of every section (frozen, unknown keys refused). The helpers
turn environment text into values: a comma-separated list into a tuple of lower-case
items, JSON text into a mapping. ``validate_tenant_id`` checks a tenant id here, at the
bottom of the package, because sections (tenant, mcp) and the rest of the app use it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict

_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _split_list(value: Any) -> Any:
    """A comma-separated string (the env) or a list (TOML) as a tuple of lower-case items."""
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list | tuple):
        return tuple(str(part).strip().lower() for part in value)
    return value


def _json_mapping(value: Any) -> Any:
    """A mapping given as JSON text (an environment variable) as a dict."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a JSON object: {exc.msg}") from None
        if not isinstance(value, dict):
            raise ValueError('a JSON object is needed, e.g. {"chat": 30}')
    return value


TENANT_ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


def validate_tenant_id(value: str) -> str:
    if not TENANT_ID_PATTERN.match(value):
        raise ValueError(
            f"tenant id {value!r} is invalid: use 1-63 lower-case letters, digits, '_' or '-', "
            "starting with a letter or digit"
        )
    return value
