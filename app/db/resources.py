"""Where the migrations and SQL files live.

In the repository they are the top-level folders ``migrations/`` and ``sql/``;
installed, they are the packages ``app.migrations`` and ``app.sql`` (see
pyproject.toml), so both layouts resolve through importlib.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from pathlib import Path


def _package_dir(package: str) -> Path:
    return Path(str(files(package)))


def migrations_dir() -> Path:
    return _package_dir("app.migrations")


def sql_dir() -> Path:
    return _package_dir("app.sql")


@cache
def load_sql(name: str) -> str:
    """Text of ``sql/<name>``; analysts read the same file the code runs."""
    return (sql_dir() / name).read_text()
